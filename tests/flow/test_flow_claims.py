"""Flow control as a claim sees it, on both engines: pauses, limits, partitions, rates, sequences.

Each test claims with the runner's own claim operation and finishes jobs by
hand, so the database's decisions are read one claim at a time, without a
timer. tests/flow/test_flow_processes.py runs the same rules in real runner
processes.
"""

import concurrent.futures
import datetime
from collections.abc import Callable

import pytest
from flow_helpers import claim, finish
from pydantic import BaseModel

import jobtable

KIND = jobtable.Kind("k", int, int, queue="q")
HOUR = datetime.timedelta(hours=1)
LIMIT = 10.0
"""Seconds a test waits for a write before it fails."""


def test_a_paused_queue_claims_nothing_and_claims_again_after_resume(
    store: jobtable.Store,
) -> None:
    ids = KIND.enqueue_many(store, [1, 2])
    store.pause("q")
    assert claim(store, "q", 5) == []
    assert store.inspect(ids[0]).waiting is jobtable.WaitReason.PAUSED
    # Enqueueing still works while paused.
    third = KIND.enqueue(store, 3)
    store.resume("q")
    assert claim(store, "q", 5) == [*ids, third]


def test_a_pause_lets_running_jobs_finish(store: jobtable.Store) -> None:
    [first, second] = KIND.enqueue_many(store, [1, 2])
    assert claim(store, "q", 1) == [first]
    store.pause("q")
    finish(store, first)
    assert store.get(first).status is jobtable.Status.SUCCEEDED
    assert claim(store, "q", 1) == []
    assert store.inspect(second).status is jobtable.Status.QUEUED


def test_a_global_limit_counts_every_runners_running_jobs(store: jobtable.Store) -> None:
    store.set_limits("q", concurrency=2)
    ids = KIND.enqueue_many(store, list(range(5)))
    assert claim(store, "q", 1, runner="a") == ids[:1]
    assert claim(store, "q", 5, runner="b") == ids[1:2]
    assert claim(store, "q", 5, runner="c") == []
    assert store.inspect(ids[2]).waiting is jobtable.WaitReason.CONCURRENCY
    finish(store, ids[0], "failed", runner="a")
    assert claim(store, "q", 5, runner="c") == ids[2:3]


def test_a_limit_leaves_other_queues_alone(store: jobtable.Store) -> None:
    store.set_limits("q", concurrency=1)
    other = jobtable.Kind("o", int, int, queue="other")
    ids = other.enqueue_many(store, [1, 2, 3])
    assert claim(store, "other", 5) == ids


def test_a_partition_limit_holds_per_key_and_keys_run_side_by_side(
    store: jobtable.Store,
) -> None:
    store.set_limits("q", partition_limit=1)
    a = KIND.enqueue_many(store, [1, 2], partition_key="a")
    b = KIND.enqueue_many(store, [3, 4], partition_key="b")
    assert claim(store, "q", 5) == [a[0], b[0]]
    assert store.inspect(a[1]).waiting is jobtable.WaitReason.PARTITION
    finish(store, b[0])
    assert claim(store, "q", 5) == [b[1]]


def test_a_small_key_is_not_starved_behind_a_flooded_one(store: jobtable.Store) -> None:
    store.set_limits("q", partition_limit=3)
    flood = KIND.enqueue_many(store, list(range(50)), partition_key="big")
    small = KIND.enqueue_many(store, [1, 2, 3], partition_key="small")
    # Round-robin: the oldest of each key, then the second of each, and so on
    # (claim returns them in enqueue order).
    assert claim(store, "q", 4) == [flood[0], flood[1], small[0], small[1]]


def test_jobs_without_a_partition_key_count_as_one_key(store: jobtable.Store) -> None:
    store.set_limits("q", partition_limit=1)
    plain = KIND.enqueue_many(store, [1, 2])
    keyed = KIND.enqueue(store, 3, partition_key="a")
    assert claim(store, "q", 5) == [plain[0], keyed]


def test_a_kinds_partition_computes_the_key_from_the_typed_payload(
    store: jobtable.Store,
) -> None:
    by_field = jobtable.Kind(
        "f", dict[str, str], int, queue="q", partition=jobtable.Partition("customer")
    )
    by_function = jobtable.Kind(
        "g", int, int, queue="q", partition=jobtable.Partition(lambda n: f"n{n % 2}")
    )
    store.set_limits("q", partition_limit=1)
    first = by_field.enqueue(store, {"customer": "c1"})
    by_field.enqueue(store, {"customer": "c1"})
    odd = by_function.enqueue(store, 1)
    by_function.enqueue(store, 3)
    even = by_function.enqueue(store, 2)
    assert claim(store, "q", 10) == [first, odd, even]


def test_a_rate_limit_counts_starts_within_its_period_whatever_their_outcome(
    store: jobtable.Store,
) -> None:
    store.set_limits("q", rate=jobtable.Rate(2, per=HOUR))
    ids = KIND.enqueue_many(store, list(range(4)))
    assert claim(store, "q", 1) == ids[:1]
    finish(store, ids[0], "failed")
    assert claim(store, "q", 5) == ids[1:2]
    finish(store, ids[1])
    # Nothing runs, yet two started this hour.
    assert claim(store, "q", 5) == []
    assert store.inspect(ids[2]).waiting is jobtable.WaitReason.RATE


def test_a_rate_per_key_holds_for_each_key_apart(store: jobtable.Store) -> None:
    store.set_limits("q", rate=jobtable.Rate(1, per=HOUR, per_key=True))
    a = KIND.enqueue_many(store, [1, 2], partition_key="a")
    b = KIND.enqueue_many(store, [3, 4], partition_key="b")
    assert claim(store, "q", 5) == [a[0], b[0]]
    finish(store, a[0])
    assert claim(store, "q", 5) == []
    assert store.inspect(a[1]).waiting is jobtable.WaitReason.RATE


def test_a_sequence_runs_one_at_a_time_in_enqueue_order(store: jobtable.Store) -> None:
    s1 = KIND.enqueue_many(store, [1, 2, 3], sequence_key="order-1")
    s2 = KIND.enqueue(store, 4, sequence_key="order-2")
    plain = KIND.enqueue(store, 5)
    assert claim(store, "q", 10) == [s1[0], s2, plain]
    assert store.inspect(s1[1]).waiting is jobtable.WaitReason.SEQUENCE
    finish(store, s1[0])
    assert claim(store, "q", 10) == [s1[1]]
    finish(store, s1[1])
    assert claim(store, "q", 10) == [s1[2]]


def test_a_retried_job_keeps_its_place_in_its_sequence(store: jobtable.Store) -> None:
    retried = jobtable.Kind("r", int, int, queue="q", max_attempts=2)
    head = retried.enqueue(store, 1, sequence_key="s")
    behind = retried.enqueue(store, 2, sequence_key="s")
    assert claim(store, "q", 5) == [head]
    attempt = store.inspect(head).attempt
    from jobtable._engines.rows import Outcome
    from jobtable._runner.run_operations import Finish, FlowClaim
    from jobtable._values import timestamp

    now = timestamp(store.clock())
    retry = Outcome(head, attempt, "queued", None, "try again", now)
    store.engine.write(FlowClaim([Finish(retry, "r")], "r1", "q", 0, now))
    assert claim(store, "q", 5) == [head]
    assert store.inspect(behind).waiting is jobtable.WaitReason.SEQUENCE


def test_a_failed_job_blocks_its_sequence_until_an_operator_retries_it(
    store: jobtable.Store,
) -> None:
    head, behind = KIND.enqueue_many(store, [1, 2], sequence_key="s")
    assert claim(store, "q", 5) == [head]
    finish(store, head, "failed")
    assert claim(store, "q", 5) == []
    assert store.inspect(behind).waiting is jobtable.WaitReason.SEQUENCE
    assert store.retry(head) is jobtable.RetryResult.RETRIED
    assert claim(store, "q", 5) == [head]
    finish(store, head)
    assert claim(store, "q", 5) == [behind]


def test_a_cancelled_job_blocks_its_sequence_until_deleted(store: jobtable.Store) -> None:
    head, behind = KIND.enqueue_many(store, [1, 2], sequence_key="s")
    assert store.cancel(head) is jobtable.CancelResult.CANCELLED
    assert claim(store, "q", 5) == []
    store.delete(head)
    assert claim(store, "q", 5) == [behind]


def test_a_continue_sequence_lets_the_next_job_run_after_a_failure(
    store: jobtable.Store,
) -> None:
    going_on = jobtable.Kind(
        "c", int, int, queue="q", sequence=jobtable.Sequence("n", on_failure="continue")
    )
    payload_sequence = jobtable.Kind(
        "d", dict[str, int], int, queue="q", sequence=jobtable.Sequence("n", on_failure="continue")
    )
    del going_on
    head = payload_sequence.enqueue(store, {"n": 1})
    behind = payload_sequence.enqueue(store, {"n": 1})
    assert claim(store, "q", 5) == [head]
    finish(store, head, "failed")
    assert claim(store, "q", 5) == [behind]


def test_an_operators_limits_win_over_the_code_until_cleared(store: jobtable.Store) -> None:
    store.declare([jobtable.Queue("q", concurrency=5)])
    store.set_limits("q", concurrency=1)
    # A runner starting later declares again: the operator's limit stays.
    store.declare([jobtable.Queue("q", concurrency=7)])
    [info] = [q for q in store.queues() if q.name == "q"]
    assert (info.concurrency, info.overridden) == (1, True)
    store.clear_limits("q")
    [info] = [q for q in store.queues() if q.name == "q"]
    assert (info.concurrency, info.overridden) == (7, False)


def test_declaring_the_limits_a_queue_holds_already_waits_for_no_claim(pg_url: str) -> None:
    # On PostgreSQL a limited claim locks the queue's row until it commits:
    # a runner starting meanwhile with the same limits (a restart) neither
    # writes nor waits; one with other limits writes them once it may.
    import psycopg

    flow = [jobtable.Queue("q", concurrency=5, rate=jobtable.Rate(10, per=HOUR))]
    with (
        jobtable.Store.open(pg_url) as store,
        concurrent.futures.ThreadPoolExecutor(1) as thread,
    ):
        store.declare(flow)
        store.pause("q")
        with psycopg.connect(pg_url) as holder:
            holder.execute("SELECT 1 FROM queues WHERE name = 'q' FOR UPDATE")
            declared = thread.submit(store.declare, flow)
            try:
                declared.result(timeout=LIMIT)
            except TimeoutError:
                pytest.fail(f"declaring unchanged limits waited {LIMIT} s for the row's lock")
            changed = thread.submit(store.declare, [jobtable.Queue("q", concurrency=6)])
        changed.result(timeout=LIMIT)
        [info] = [q for q in store.queues() if q.name == "q"]
        assert (info.paused, info.concurrency, info.rate_limit) == (True, 6, None)


def test_queues_lists_pauses_limits_and_counts(store: jobtable.Store) -> None:
    KIND.enqueue_many(store, [1, 2, 3])
    store.pause("q")
    store.set_limits("q", concurrency=3, rate=jobtable.Rate(60, per=datetime.timedelta(minutes=1)))
    [info] = store.queues()
    assert info.model_dump() == {
        "name": "q",
        "paused": True,
        "concurrency": 3,
        "partition_limit": None,
        "rate_limit": 60,
        "rate_per": 60.0,
        "rate_per_key": False,
        "overridden": True,
        "queued": 3,
        "running": 0,
    }


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: jobtable.Queue("q", concurrency=0), "concurrency must be at least 1"),
        (lambda: jobtable.Queue("q", partition_limit=-1), "partition_limit must be at least 1"),
        (lambda: jobtable.Rate(0, per=HOUR), "limit must be at least 1"),
        (lambda: jobtable.Rate(5, per=datetime.timedelta(0)), "per must be a positive timedelta"),
        (lambda: jobtable.Queue("", concurrency=1), "a queue name must be a non-empty str"),
        (lambda: jobtable.Queue("a\x00b", concurrency=1), "cannot be stored"),
    ],
)
def test_a_bad_limit_is_refused(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_a_bad_operator_limit_stores_nothing(store: jobtable.Store) -> None:
    store.set_limits("q", concurrency=2)
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        store.set_limits("q", concurrency=0)
    with pytest.raises(TypeError, match=r"rate must be a jobtable\.Rate"):
        store.set_limits("q", rate=5)  # type: ignore[arg-type]
    [info] = store.queues()
    assert info.concurrency == 2


def test_a_partition_function_that_raises_or_returns_no_str_stores_nothing(
    store: jobtable.Store,
) -> None:
    raising = jobtable.Kind("x", int, int, partition=jobtable.Partition(lambda n: str(1 // n)))
    wrong = jobtable.Kind("y", int, int, partition=jobtable.Partition(lambda n: n))
    missing = jobtable.Kind("z", dict[str, int], int, partition=jobtable.Partition("customer"))
    with pytest.raises(ValueError, match="the partition function raised ZeroDivisionError"):
        raising.enqueue(store, 0)
    with pytest.raises(TypeError, match="the partition function must return a str"):
        wrong.enqueue(store, 1)
    with pytest.raises(ValueError, match="partition field 'customer' is not in the payload"):
        missing.enqueue(store, {"other": 1})
    assert store.list_jobs() == []


def test_a_sequence_key_with_a_nul_stores_nothing(store: jobtable.Store) -> None:
    with pytest.raises(ValueError, match="sequence key 'a\\\\x00' cannot be stored"):
        KIND.enqueue(store, 1, sequence_key="a\x00")
    with pytest.raises(ValueError, match="partition key must be a non-empty str"):
        KIND.enqueue(store, 1, partition_key="")
    assert store.list_jobs() == []


def test_a_sequence_without_by_puts_the_kinds_jobs_in_one_sequence(
    store: jobtable.Store,
) -> None:
    in_order = jobtable.Kind("ordered", int, int, queue="q", sequence=jobtable.Sequence())
    head, behind = in_order.enqueue_many(store, [1, 2])
    own_key = in_order.enqueue(store, 3, sequence_key="elsewhere")
    assert claim(store, "q", 5) == [head, own_key]
    assert store.inspect(behind).waiting is jobtable.WaitReason.SEQUENCE
    finish(store, head)
    assert claim(store, "q", 5) == [behind]


class Export(BaseModel):
    customer_id: str


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (
            lambda: jobtable.Kind("e", Export, int, partition=jobtable.Partition("customer")),
            r"Kind 'e': partition field 'customer' is not a field of Export "
            r"\(its fields: customer_id\)",
        ),
        (
            lambda: jobtable.Kind("e", Export, int, sequence=jobtable.Sequence("customer")),
            r"Kind 'e': sequence field 'customer' is not a field of Export",
        ),
    ],
    ids=["partition", "sequence"],
)
def test_a_flow_field_the_payload_type_lacks_is_refused_when_the_kind_is_declared(
    declare: Callable[[], object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        declare()


def test_set_limits_with_no_limit_is_refused_and_keeps_the_codes_limits(
    store: jobtable.Store,
) -> None:
    store.declare([jobtable.Queue("q", concurrency=2)])
    with pytest.raises(ValueError, match=r"set_limits 'q': no limit given: .*clear_limits\('q'\)"):
        store.set_limits("q")
    [info] = store.queues()
    assert (info.concurrency, info.overridden) == (2, False)


def test_resuming_a_mistyped_queue_leaves_no_row_and_a_declared_queue_keeps_its_own(
    store: jobtable.Store,
) -> None:
    store.declare([jobtable.Queue("q", concurrency=2)])
    store.pause("emial")
    store.pause("q")
    assert [queue.name for queue in store.queues()] == ["emial", "q"]
    store.resume("emial")
    store.resume("q")
    [info] = store.queues()
    assert (info.name, info.paused, info.concurrency) == ("q", False, 2)


def test_clearing_an_operators_limits_of_an_undeclared_queue_leaves_no_row(
    store: jobtable.Store,
) -> None:
    store.set_limits("typo", concurrency=1)
    store.clear_limits("typo")
    assert store.queues() == []
