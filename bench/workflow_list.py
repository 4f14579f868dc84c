"""What ``Store.workflows`` costs as workflows pile up: the listing's page at two table sizes.

On one SQLite file (durable=False, filled through the public API, many
workflows to a transaction), it stores SMALL workflows of three jobs,
times the first page of 50 and a keyset page halfway down, then adds
workflows up to LARGE and times both again. The listing reads one range
of workflows_by_time and each listed workflow's jobs through
jobs_workflow, so the page should cost the same at both sizes; the ratio
says whether it does.

    .venv/bin/python -m bench.workflow_list                 # 1,000 then 50,000 workflows
    .venv/bin/python -m bench.workflow_list --large 200000
"""

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import jobtable

step = jobtable.Kind("step", int, int)


def fill(store: jobtable.Store, path: Path, count: int) -> None:
    """Stores count workflows of three jobs (a, then b and c after a), in batches."""
    conn = sqlite3.connect(path)
    try:
        for start in range(0, count, 5000):
            with conn:
                for n in range(start, min(count, start + 5000)):
                    wf = jobtable.Workflow(f"w{n % 10}")
                    a = wf.add(step, n)
                    wf.add(step, n, after=[a])
                    wf.add(step, n, after=[a])
                    wf.enqueue(store, conn=conn)
    finally:
        conn.close()


def timed(store: jobtable.Store, before: str | None, rounds: int = 7) -> float:
    """The median seconds of a page of 50 after before."""
    seconds = []
    for _ in range(rounds):
        began = time.perf_counter()
        store.workflows(before=before, limit=50)
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


def pages(store: jobtable.Store, count: int) -> tuple[float, float]:
    """The first page's time and a halfway page's."""
    halfway = store.workflows(limit=min(1000, count // 2))[-1].id
    return timed(store, None), timed(store, halfway)


def main() -> None:
    """Prints the page times at both sizes and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "jobs.db"
        with jobtable.Store.open(path, durable=False) as store:
            fill(store, path, args.small)
            small = pages(store, args.small)
            fill(store, path, args.large - args.small)
            large = pages(store, args.large)
    print("| workflows (3 jobs each) | first page | a page halfway |")
    print("|---:|---:|---:|")
    for count, (first, half) in ((args.small, small), (args.large, large)):
        print(f"| {count:,} | {first * 1000:.2f} ms | {half * 1000:.2f} ms |")
    print(f"| ratio | {large[0] / small[0]:.1f}x | {large[1] / small[1]:.1f}x |")


if __name__ == "__main__":
    main()
