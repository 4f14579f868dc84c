"""A running job adds jobs to its workflow: stored with its success, never with its failure."""

from collections.abc import Iterator

import pytest

import jobtable
from jobtable.testing import drain

Status = jobtable.Status

split = jobtable.Kind("split", int, int)
piece = jobtable.Kind("piece", int, int)
gather = jobtable.Kind("gather", str, int)
double = jobtable.Kind("double", int, int)


@pytest.fixture
def store(store_target: str) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(store_target) as opened:
        yield opened


def runner_of(store: jobtable.Store, fail_after_adding: bool = False) -> jobtable.Runner:
    """A runner whose split job adds a piece per unit, a gather after them, a double of itself."""
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(split)
    def do_split(ctx: jobtable.JobContext[int], n: int) -> int:
        pieces = [ctx.workflow.add(piece, i, after=[ctx.workflow.current]) for i in range(n)]
        ctx.workflow.add(gather, "sum", after=pieces)
        ctx.workflow.add(double, ctx.workflow.current)
        if fail_after_adding:
            raise jobtable.Failure("split failed")
        return n

    @runner.handler(piece)
    def do_piece(ctx: jobtable.JobContext[int], i: int) -> int:
        return i * i

    @runner.handler(gather)
    def do_gather(ctx: jobtable.JobContext[int], label: str) -> int:
        return sum(ctx.results(piece))

    @runner.handler(double)
    def do_double(ctx: jobtable.JobContext[int], n: int) -> int:
        return 2 * n

    return runner


async def test_jobs_a_running_job_adds_are_stored_with_its_success_and_fan_in(
    store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("fan")
    wf.add(split, 4)
    wf.enqueue(store)
    records = await drain(runner_of(store))
    by_kind: dict[str, list[jobtable.JobRecord]] = {}
    for record in records:
        by_kind.setdefault(record.kind, []).append(record)
    assert len(by_kind["piece"]) == 4
    [gathered] = by_kind["gather"]
    assert (gathered.status, gathered.result) == (Status.SUCCEEDED, 0 + 1 + 4 + 9)
    assert records.index(gathered) > max(records.index(r) for r in by_kind["piece"])
    [doubled] = by_kind["double"]
    assert doubled.result == 8
    assert store.inspect(gathered.id).workflow_id == wf.id


async def test_jobs_a_failing_job_added_are_not_stored(store: jobtable.Store) -> None:
    wf = jobtable.Workflow("fan")
    wf.add(split, 4)
    wf.enqueue(store)
    records = await drain(runner_of(store, fail_after_adding=True))
    assert [(r.kind, r.status) for r in records] == [("split", Status.FAILED)]
    assert store.list_jobs() == [store.inspect(records[0].id).model_copy(update={"workflow": None})]


def test_a_job_of_no_workflow_cannot_add_to_one(store: jobtable.Store) -> None:
    from jobtable.testing import drain_sync

    runner = jobtable.Runner(store, workers=1)
    seen: list[str] = []

    @runner.handler(split)
    def do_split(ctx: jobtable.JobContext[int], n: int) -> int:
        try:
            ctx.workflow.add(piece, 1)
        except ValueError as err:
            seen.append(str(err))
        return n

    split.enqueue(store, 1)
    drain_sync(runner)
    [message] = seen
    assert "only a job of a workflow" in message


def test_an_added_payload_of_the_wrong_type_fails_at_the_add(store: jobtable.Store) -> None:
    from jobtable.testing import drain_sync

    runner = jobtable.Runner(store, workers=1)
    seen: list[str] = []

    @runner.handler(split)
    def do_split(ctx: jobtable.JobContext[int], n: int) -> int:
        try:
            ctx.workflow.add(piece, "not an int")  # type: ignore[misc]
        except jobtable.PayloadError:
            seen.append("refused")
        ctx.workflow.add(piece, 2)
        return n

    wf = jobtable.Workflow("fan")
    wf.add(split, 1)
    wf.enqueue(store)
    records = drain_sync(runner)
    assert seen == ["refused"]
    assert [r.kind for r in records] == ["split", "piece"]
