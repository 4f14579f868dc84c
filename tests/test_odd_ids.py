"""Ids, names and messages that are odd text get the same answer on every engine.

A str that is not a job's id is JobNotFound, whatever it holds; a non-str is
a TypeError. Text PostgreSQL cannot store (NUL, and lone surrogates, which
neither engine can encode) is refused where it is given (a kind or runner
name) or stored escaped (a Failure's message), alike on both engines.
"""

import re
from collections.abc import Callable

import pytest

import jobtable

ODD_STRINGS = ["a\x00b", "", "x" * 10_000, "\ud800", "é" * 30, "' OR 1=1 --"]


async def noop(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


@pytest.mark.parametrize("job_id", ODD_STRINGS, ids=repr)
async def test_a_str_that_is_no_jobs_id_is_job_not_found(
    store: jobtable.Store, job_id: str
) -> None:
    runner = jobtable.Runner(store)
    kind = runner.register("noop", noop)
    kind.enqueue(1)
    declared = jobtable.Kind("noop", int, int)
    with pytest.raises(jobtable.JobNotFound):
        store.get(job_id)
    with pytest.raises(jobtable.JobNotFound):
        await store.aget(job_id)
    with pytest.raises(jobtable.JobNotFound):
        runner.get(job_id)
    with pytest.raises(jobtable.JobNotFound):
        await runner.aget(job_id)
    with pytest.raises(jobtable.JobNotFound):
        kind.get(job_id)
    with pytest.raises(jobtable.JobNotFound):
        await kind.aget(job_id)
    with pytest.raises(jobtable.JobNotFound):
        declared.get(store, job_id)
    with pytest.raises(jobtable.JobNotFound):
        store.inspect(job_id)
    with pytest.raises(jobtable.JobNotFound):
        await store.ainspect(job_id)


@pytest.mark.parametrize("job_id", [123, None, b"abc", 1.5], ids=repr)
async def test_a_job_id_that_is_not_a_str_is_a_type_error(
    store: jobtable.Store, job_id: object
) -> None:
    runner = jobtable.Runner(store)
    kind = runner.register("noop", noop)
    declared = jobtable.Kind("noop", int, int)
    with pytest.raises(TypeError, match="want str"):
        store.get(job_id)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="want str"):
        await store.aget(job_id)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="want str"):
        runner.get(job_id)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="want str"):
        await runner.aget(job_id)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="want str"):
        kind.get(job_id)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="want str"):
        declared.get(store, job_id)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="want str"):
        store.inspect(job_id)  # type: ignore[arg-type]


def test_every_call_that_takes_an_id_names_a_non_str_one_alike(store: jobtable.Store) -> None:
    calls: dict[str, list[Callable[[str], object]]] = {
        "job": [store.cancel, store.retry, store.delete, store.inspect, store.get],
        "workflow": [store.workflow, store.cancel_workflow],
    }
    for what, takers in calls.items():
        for call in takers:
            with pytest.raises(TypeError, match=rf"^{what} id is int, want str$"):
                call(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^job id is bytes, want str$"):
        store.cancel_many(["a", b"b"])  # type: ignore[list-item]


@pytest.mark.parametrize("name", ["a\x00b", "\udc80"], ids=repr)
def test_a_kind_name_no_engine_can_store_is_refused_at_register(
    store: jobtable.Store, name: str
) -> None:
    runner = jobtable.Runner(store)
    with pytest.raises(ValueError, match="cannot be stored"):
        runner.register(name, noop)
    assert runner.kinds == []


@pytest.mark.parametrize("name", ["a\x00b", "\udc80"], ids=repr)
def test_a_kind_name_no_engine_can_store_is_refused_at_its_declaration(name: str) -> None:
    with pytest.raises(ValueError, match="cannot be stored"):
        jobtable.Kind(name, int, int)


@pytest.mark.parametrize("name", ["a\x00b", "\udc80"], ids=repr)
def test_a_runner_name_no_engine_can_store_is_refused(store: jobtable.Store, name: str) -> None:
    with pytest.raises(ValueError, match="cannot be stored"):
        jobtable.Runner(store, name=name)


@pytest.mark.parametrize("name", ["a\x00b", "\udc80"], ids=repr)
def test_a_queue_name_no_engine_can_store_is_refused_at_a_kinds_declaration(name: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"queue {name!r} cannot be stored")):
        jobtable.Kind("noop", int, int, queue=name)


@pytest.mark.parametrize("name", ["a\x00b", "\udc80"], ids=repr)
def test_a_queue_name_no_engine_can_store_is_refused_at_enqueue_storing_nothing(
    store: jobtable.Store, name: str
) -> None:
    kind = jobtable.Kind("noop", int, int)
    with pytest.raises(
        ValueError, match=re.escape(f"enqueue 'noop': queue {name!r} cannot be stored")
    ):
        kind.enqueue(store, 1, queue=name)
    with pytest.raises(ValueError, match=re.escape(f"queue {name!r} cannot be stored")):
        kind.enqueue_many(store, [1, 2], queue=name)
    assert store.counts() == {}


@pytest.mark.parametrize("name", ["a\x00b", "\udc80"], ids=repr)
def test_a_queue_name_no_engine_can_store_is_refused_by_the_runner(
    store: jobtable.Store, name: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(f"queue {name!r} cannot be stored")):
        jobtable.Runner(store, queues={"default": 1, name: 1})


@pytest.mark.parametrize(
    ("message", "stored"),
    [
        ("bad \x00 byte", "bad \\x00 byte"),
        ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
        ("plain é ✓", "plain é ✓"),
    ],
    ids=["nul", "surrogate", "unicode"],
)
async def test_a_failure_message_no_engine_can_store_is_stored_escaped(
    store: jobtable.Store, message: str, stored: str
) -> None:
    """The job ends failed at once with the escaped text: nothing is left running or retried."""

    async def fail(ctx: jobtable.JobContext[int], payload: int) -> int:
        raise jobtable.Failure(message)

    runner = jobtable.Runner(store)
    job_id = runner.register("fail", fail).enqueue(0)
    assert await runner.run_next() == job_id
    job = runner.get(job_id)
    assert (job.status, job.error) == (jobtable.Status.FAILED, stored)
