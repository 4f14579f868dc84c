"""Batches by key: a batch kind with ``Batch(by=...)`` hands its handler jobs of one key only.

Each test runs on both engines, with a real runner; the handler's calls are
recorded in lists, not mocks.
"""

import datetime
from collections.abc import Awaitable, Callable, Sequence

import pytest
from pydantic import BaseModel
from started import run_until

import jobtable

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]
HOUR = datetime.timedelta(hours=1)


class Mail(BaseModel):
    tenant: str
    n: int


def mailing(
    by: object, size: int = 10, max_wait: datetime.timedelta = HOUR
) -> jobtable.BatchKind[Mail, int]:
    batch = jobtable.Batch(size=size, max_wait=max_wait, by=by)  # type: ignore[arg-type]
    return jobtable.BatchKind("mail", Mail, int, batch=batch)


@pytest.mark.parametrize("by", ["tenant", lambda mail: mail.tenant])
async def test_each_call_holds_the_jobs_of_one_key(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished, by: object
) -> None:
    kind = mailing(by, size=5)
    payloads = [Mail(tenant="ab"[n % 2], n=n) for n in range(20)]
    ids = kind.enqueue_many(store, payloads)
    calls: list[list[Mail]] = []
    runner = jobtable.Runner(store, workers=20, poll_interval=0.05)

    @runner.handler(kind)
    async def send(jobs: Sequence[jobtable.BatchJob[Mail, int]]) -> list[int]:
        calls.append([job.payload for job in jobs])
        return [job.payload.n for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    # Full batches of one tenant each: 20 jobs, two keys, 5 a batch.
    assert sorted(len(call) for call in calls) == [5, 5, 5, 5]
    assert all(len({mail.tenant for mail in call}) == 1 for call in calls)
    assert [kind.get(store, job_id).result for job_id in ids] == list(range(20))


async def test_a_key_s_batch_waits_for_its_own_max_wait_only(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    # Without keys, the three jobs would make one full batch of 3 at once.
    kind = mailing("tenant", size=3, max_wait=datetime.timedelta(milliseconds=200))
    ids = kind.enqueue_many(
        store, [Mail(tenant="a", n=1), Mail(tenant="a", n=2), Mail(tenant="b", n=3)]
    )
    calls: list[list[int]] = []
    runner = jobtable.Runner(store, workers=3, poll_interval=0.05)

    @runner.handler(kind)
    def send(jobs: Sequence[jobtable.BatchJob[Mail, int]]) -> list[int]:
        calls.append(sorted(job.payload.n for job in jobs))
        return [job.payload.n for job in jobs]

    await run_until(runner, ids, wait_until, finished)
    assert sorted(calls) == [[1, 2], [3]]


async def test_a_key_function_that_raises_fails_its_attempt_as_its_handler_would(
    store: jobtable.Store, wait_until: WaitUntil, finished: Finished
) -> None:
    def tenant(mail: Mail) -> str:
        if mail.n == 0:
            raise jobtable.Failure("no tenant for 0")
        return mail.tenant

    kind = mailing(tenant, size=2, max_wait=datetime.timedelta(milliseconds=100))
    good, bad = kind.enqueue_many(store, [Mail(tenant="a", n=1), Mail(tenant="a", n=0)])
    runner = jobtable.Runner(store, workers=2, poll_interval=0.05)

    @runner.handler(kind)
    async def send(jobs: Sequence[jobtable.BatchJob[Mail, int]]) -> list[int]:
        return [job.payload.n for job in jobs]

    await run_until(runner, [good, bad], wait_until, finished)
    assert kind.get(store, good).result == 1
    failed = store.inspect(bad)
    assert failed.status == jobtable.Status.FAILED
    assert "no tenant for 0" in str(failed.error)


def test_a_key_field_the_payload_lacks_is_refused_at_the_declaration() -> None:
    with pytest.raises(ValueError, match="batch field 'team' is not a field of Mail"):
        mailing("team")


@pytest.mark.parametrize(
    ("by", "error", "message"),
    [("", ValueError, "by must be a payload field name"), (7, TypeError, "got 7")],
)
def test_a_bad_key_is_refused(by: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        jobtable.Batch(size=2, max_wait=HOUR, by=by)  # type: ignore[arg-type]
