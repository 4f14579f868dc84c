"""The flow-control queries of the seam (queries/flow.sql), alike on every engine.

Queue "q" gets limits, a pause or a rate; each case checks what a claim and
the queue's reads make of them.
"""

from seam import now

from conformance.engine_kits import covers
from jobtable._engines.base import Engine, Queries
from jobtable._engines.flow import QueueFlow, QueueLimits
from jobtable._engines.rows import NewJob


def fill(engine: Engine, *ids: str) -> None:
    """Stores one ready job of queue q per id, in one write."""
    jobs = [NewJob(job_id, "{}", now(), queue="q") for job_id in ids]
    engine.write(lambda q: q.insert_jobs(kind="k", jobs=jobs, now=now()))


def claim_q(engine: Engine, max_jobs: int = 5) -> list[str]:
    """Claims within q's limits in one write, as the runner does; the ids claimed, sorted."""

    def op(q: Queries) -> list[str]:
        flow = q.queue_flow(queue="q", lock=True) or QueueFlow(False, QueueLimits())
        rows = q.claim_within_limits(flow=flow, runner="r", queue="q", now=now(), max_jobs=max_jobs)
        return sorted(row.id for row in rows)

    return engine.write(op)


@covers("declare_queue", "queue_flow", "list_queues")
def test_declared_limits_are_the_queues_flow(opened: Engine) -> None:
    limits = QueueLimits(concurrency=2)
    opened.write(lambda q: q.declare_queue(name="q", limits=limits, now=now()))
    fill(opened, "a")
    flow = opened.read(lambda q: q.queue_flow(queue="q", lock=False))
    rows = opened.read(lambda q: q.list_queues())
    assert flow == QueueFlow(False, limits)
    assert opened.read(lambda q: q.queue_flow(queue="none", lock=False)) is None
    assert [(r.name, r.limits, r.overridden, r.queued, r.running) for r in rows] == [
        ("q", limits, False, 1, 0)
    ]


@covers("set_queue_limits", "clear_queue_limits", "drop_empty_queue")
def test_an_operators_limits_are_set_cleared_and_dropped(opened: Engine) -> None:
    limits = QueueLimits(concurrency=1)
    opened.write(lambda q: q.set_queue_limits(name="q", limits=limits, now=now()))
    rows = opened.read(lambda q: q.list_queues())
    assert [(row.name, row.limits, row.overridden) for row in rows] == [("q", limits, True)]
    assert opened.write(lambda q: q.clear_queue_limits(name="q", now=now())) == 1
    opened.write(lambda q: q.drop_empty_queue(name="q"))
    assert opened.read(lambda q: q.list_queues()) == []
    assert opened.write(lambda q: q.clear_queue_limits(name="q", now=now())) == 0


@covers("set_queue_paused", "claim_within_limits")
def test_a_paused_queue_gives_nothing_and_limits_cap_a_claim(opened: Engine) -> None:
    opened.write(lambda q: q.set_queue_limits(name="q", limits=QueueLimits(1), now=now()))
    fill(opened, "a", "b")
    opened.write(lambda q: q.set_queue_paused(name="q", paused=True, now=now()))
    assert claim_q(opened) == []
    opened.write(lambda q: q.set_queue_paused(name="q", paused=False, now=now()))
    flow = QueueFlow(False, QueueLimits(1))
    rows = opened.write(
        lambda q: q.claim_within_limits(flow=flow, runner="r", queue="q", now=now(), max_jobs=5)
    )
    assert [row.id for row in rows] == ["a"]
    assert claim_q(opened) == []


@covers("next_rate_opening")
def test_a_rate_window_opens_when_its_oldest_start_leaves_it(opened: Engine) -> None:
    limits = QueueLimits(rate_limit=1, rate_period=3600.0)
    opened.write(lambda q: q.set_queue_limits(name="q", limits=limits, now=now()))
    before = opened.read(lambda q: q.next_rate_opening(queue="q", period=3600.0, now=now()))
    fill(opened, "a", "b")
    assert claim_q(opened) == ["a"]
    after = opened.read(lambda q: q.next_rate_opening(queue="q", period=3600.0, now=now()))
    assert before is None
    assert after is not None
    assert 3000 < after <= 3600
    assert claim_q(opened) == []


@covers("get_wait_facts")
def test_wait_facts_count_what_holds_a_job_back(opened: Engine) -> None:
    opened.write(lambda q: q.set_queue_limits(name="q", limits=QueueLimits(1), now=now()))
    fill(opened, "a", "b")
    claim_q(opened)
    facts = opened.read(lambda q: q.get_wait_facts(id="b", now=now()))
    assert facts is not None
    assert (facts.paused, facts.limits, facts.running) == (False, QueueLimits(1), 1)
    assert not facts.behind_sequence
    assert opened.read(lambda q: q.get_wait_facts(id="a", now=now())) is None
