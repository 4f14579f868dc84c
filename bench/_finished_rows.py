"""What a table of finished rows costs: enqueue, claim and drain beside 0, 100k and 1M of them.

The "finished rows" section of ``make bench``: for each size of the plan,
the finished rows are bulk-loaded (untimed), then the enqueue, claim and
end-to-end figures and their raw loops are measured again, each run's own
rows deleted after it.
"""

import time

from bench import _db
from bench._end_to_end import end_to_end
from bench._enqueue import claim_single, enqueue_batched, enqueue_single
from bench._plan import Plan, Results, failed, log


def measure(db: _db.Database, plan: Plan, results: Results) -> None:
    """The section: each size's rows loaded, then every figure again, plan.repeat times."""
    store = db.store
    single = plan.single_calls
    batched = plan.batched_jobs
    e2e_count = results.counts.get("e2e.4", 2000)
    for size in plan.finished_sizes:
        have = db.count("succeeded")  # the loaded rows: every run's own are deleted after it
        if size > have:
            log(f"bulk-loading {size - have} finished rows")
            begin = time.perf_counter()
            db.fill_finished(size - have)
            log(f"  loaded in {time.perf_counter() - begin:.1f} s")
        keep = db.max_seq()
        log(f"costs with {size} finished rows x {plan.repeat}")
        for _ in range(plan.repeat):
            at = f"rows{size}"
            results.add(f"{at}.enq.single", single / enqueue_single(store, single), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.raw.insert1", single / db.raw_insert(single, 1), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.enq.many", batched / enqueue_batched(store, batched), "jobs/s")
            db.reset(keep)
            results.add(
                f"{at}.raw.insert100", batched / db.raw_insert(batched, _db.BATCH), "jobs/s"
            )
            db.reset(keep)
            results.add(f"{at}.claim.single", single / claim_single(store, single), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.raw.claim1", single / db.raw_claim(single, 1), "jobs/s")
            db.reset(keep)
            results.add(f"{at}.raw.claim100", batched / db.raw_claim(batched, _db.BATCH), "jobs/s")
            db.reset(keep)
            try:
                rate, _ = end_to_end(db, store, 4, e2e_count, keep)
                results.add(f"{at}.e2e.4", rate, "jobs/s")
            except RuntimeError as err:
                failed(results, f"end to end, 4 workers, {size} finished rows", err)
            results.add(f"{at}.raw.batch", batched / db.raw_life(batched, "batch"), "jobs/s")
            db.reset(keep)
