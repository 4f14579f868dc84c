"""Unique jobs: one job per key while it holds the key, and what frees the key.

Each test runs on both engines. Time is the store's clock, which a test sets
instead of sleeping.
"""

import dataclasses
import datetime
from collections.abc import Iterator

import pytest
import typing_extensions
from pydantic import BaseModel, Field

import jobtable

UTC = datetime.UTC
T0 = datetime.datetime(2030, 1, 1, 12, tzinfo=UTC)
S = jobtable.Status


class Sync(BaseModel):
    account_id: int
    reason: str = ""


sync = jobtable.Kind("sync_account", Sync, int, unique=jobtable.Unique(fields=("account_id",)))
ping = jobtable.Kind("ping", int, int)


class Clock:
    """A clock that stands still until a test moves it."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime.datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed_store(store_target: str, clock: Clock) -> Iterator[jobtable.Store]:
    opened = jobtable.Store.open(store_target, clock=clock)
    yield opened
    opened.close()


def runner_of(store: jobtable.Store, outcome: Exception | None = None) -> jobtable.Runner:
    """A runner whose sync and ping handlers raise outcome, or return 0."""
    runner = jobtable.Runner(store, workers=1, name="unique")

    @runner.handler(sync)
    async def handle_sync(ctx: jobtable.JobContext[int], payload: Sync) -> int:
        if outcome is not None:
            raise outcome
        return payload.account_id

    @runner.handler(ping)
    async def handle_ping(ctx: jobtable.JobContext[int], payload: int) -> int:
        if outcome is not None:
            raise outcome
        return payload

    return runner


def test_an_enqueue_of_a_held_key_returns_the_holders_id_and_stores_nothing(
    store: jobtable.Store,
) -> None:
    first = sync.enqueue_result(store, Sync(account_id=1))
    again = sync.enqueue_result(store, Sync(account_id=1, reason="other fields do not count"))
    assert first == jobtable.EnqueueResult(first.id, duplicate=False)
    assert again == jobtable.EnqueueResult(first.id, duplicate=True)
    assert sync.enqueue(store, Sync(account_id=1)) == first.id
    other = sync.enqueue_result(store, Sync(account_id=2))
    assert not other.duplicate
    assert [r.id for r in store.list_jobs()] == [other.id, first.id]
    assert store.inspect(first.id).payload == {"account_id": 1, "reason": ""}


def test_a_given_key_and_the_whole_payload_are_keys_too(store: jobtable.Store) -> None:
    by_key = jobtable.Unique(key="nightly")
    a = ping.enqueue(store, 1, unique=by_key)
    assert ping.enqueue_result(store, 2, unique=by_key) == (a, True)
    whole = jobtable.Unique()
    b = ping.enqueue(store, 7, unique=whole)
    assert ping.enqueue_result(store, 7, unique=whole) == (b, True)
    assert not ping.enqueue_result(store, 8, unique=whole).duplicate
    # Keys are per kind, and an enqueue without unique is never a duplicate.
    assert not ping.enqueue_result(store, 1).duplicate
    assert len(store.list_jobs(kind="ping")) == 4
    assert not sync.enqueue_result(store, Sync(account_id=1), unique=by_key).duplicate


def test_an_enqueue_may_turn_the_kinds_uniqueness_off(store: jobtable.Store) -> None:
    a = sync.enqueue(store, Sync(account_id=1))
    b = sync.enqueue(store, Sync(account_id=1), unique=None)
    assert a != b
    assert sync.enqueue(store, Sync(account_id=1)) == a


def test_enqueue_many_reports_duplicates_within_the_batch_and_of_earlier_jobs(
    store: jobtable.Store,
) -> None:
    earlier = sync.enqueue(store, Sync(account_id=3))
    results = sync.enqueue_many_results(
        store, [Sync(account_id=n) for n in (1, 2, 1, 3, 2)], priority=4
    )
    one, two = results[0].id, results[1].id
    assert results == [(one, False), (two, False), (one, True), (earlier, True), (two, True)]
    assert sync.enqueue_many(store, [Sync(account_id=1), Sync(account_id=9)])[0] == one
    assert len(store.list_jobs(kind="sync_account")) == 4


async def test_the_async_forms_report_duplicates(store: jobtable.Store) -> None:
    first = await sync.aenqueue_result(store, Sync(account_id=5))
    assert await sync.aenqueue(store, Sync(account_id=5)) == first.id
    assert await sync.aenqueue_many_results(store, [Sync(account_id=5)]) == [(first.id, True)]
    assert await sync.aenqueue_many(store, [Sync(account_id=5)]) == [first.id]


async def test_the_key_is_held_while_running_and_freed_when_the_job_succeeds(
    store: jobtable.Store,
) -> None:
    runner = runner_of(store)
    first = sync.enqueue(store, Sync(account_id=1))
    assert await runner.run_next() == first
    assert store.get(first).status is S.SUCCEEDED
    second = sync.enqueue_result(store, Sync(account_id=1))
    assert second.id != first
    assert not second.duplicate


@pytest.mark.parametrize(
    "outcome", [jobtable.Failure("no account"), RuntimeError("x")], ids=["failure", "error"]
)
async def test_a_failed_job_frees_its_key(store: jobtable.Store, outcome: Exception) -> None:
    first = sync.enqueue(store, Sync(account_id=1))
    assert await runner_of(store, outcome).run_next() == first
    assert store.get(first).status is S.FAILED
    assert sync.enqueue(store, Sync(account_id=1)) != first


def test_a_cancelled_job_frees_its_key(store: jobtable.Store) -> None:
    first = sync.enqueue(store, Sync(account_id=1))
    assert store.cancel(first) is jobtable.CancelResult.CANCELLED
    assert sync.enqueue(store, Sync(account_id=1)) != first


async def test_a_job_waiting_for_a_retry_keeps_its_key(store: jobtable.Store) -> None:
    flaky = jobtable.Kind(
        "sync_account",
        Sync,
        int,
        max_attempts=2,
        retry=lambda attempt: datetime.timedelta(hours=1),
        unique=jobtable.Unique(fields=["account_id"]),
    )
    first = flaky.enqueue(store, Sync(account_id=1))
    assert await runner_of(store, RuntimeError("x")).run_next() == first
    record = store.inspect(first)
    assert (record.status, record.attempt) == (S.QUEUED, 1)
    assert flaky.enqueue_result(store, Sync(account_id=1)) == (first, True)


async def test_covered_finished_statuses_keep_the_key_until_pruned(
    store: jobtable.Store,
) -> None:
    once = jobtable.Unique(key="once", statuses=jobtable.Unique().statuses | {S.SUCCEEDED})
    first = ping.enqueue(store, 1, unique=once)
    assert await runner_of(store).run_next() == first
    assert store.get(first).status is S.SUCCEEDED
    assert ping.enqueue_result(store, 2, unique=once) == (first, True)
    # A job that failed is not covered, so the key of a failed holder is free.
    fails = jobtable.Unique(key="fails", statuses={S.QUEUED, S.RUNNING, S.SUCCEEDED})
    failed = ping.enqueue(store, 1, unique=fails)
    assert await runner_of(store, jobtable.Failure("no")).run_next() == failed
    assert ping.enqueue_result(store, 2, unique=fails).id != failed


def test_a_period_makes_one_job_per_period(timed_store: jobtable.Store, clock: Clock) -> None:
    daily = jobtable.Unique(key="report", period=datetime.timedelta(days=1))
    first = ping.enqueue(timed_store, 1, unique=daily)
    clock.now = T0 + datetime.timedelta(hours=11, minutes=59)
    assert ping.enqueue_result(timed_store, 1, unique=daily) == (first, True)
    clock.now = T0 + datetime.timedelta(hours=12)  # midnight UTC: the next day's period
    second = ping.enqueue_result(timed_store, 1, unique=daily)
    assert not second.duplicate
    assert len(timed_store.list_jobs()) == 2


def test_a_long_key_is_kept_as_a_digest_and_still_collides(store: jobtable.Store) -> None:
    long = jobtable.Unique(key="k" * 10_000)
    first = ping.enqueue(store, 1, unique=long)
    assert ping.enqueue_result(store, 1, unique=long) == (first, True)
    assert not ping.enqueue_result(store, 1, unique=jobtable.Unique(key="k" * 9_999)).duplicate


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: jobtable.Unique(key="a", fields=("b",)), "key or fields"),
        (lambda: jobtable.Unique(key=""), "key"),
        (lambda: jobtable.Unique(key="a\x00b"), "cannot be stored"),
        (lambda: jobtable.Unique(fields=()), "fields"),
        (lambda: jobtable.Unique(period=datetime.timedelta(0)), "period"),
        (lambda: jobtable.Unique(statuses={S.QUEUED}), "queued and running"),
        (lambda: jobtable.Unique(statuses={"queued", "running", "lost"}), "statuses"),  # type: ignore[arg-type]
        (lambda: jobtable.Unique(statuses="queued"), "statuses"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_unique_is_refused_naming_what_is_wrong(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_a_bad_unique_at_enqueue_stores_nothing(store: jobtable.Store) -> None:
    with pytest.raises(TypeError, match="unique"):
        ping.enqueue(store, 1, unique="key")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="payload that is a JSON object"):
        ping.enqueue(store, 1, unique=jobtable.Unique(fields=("nope",)))
    with pytest.raises(ValueError, match=r"unique field 'nope' is not a field of Sync"):
        sync.enqueue_many(
            store, [Sync(account_id=1)], unique=jobtable.Unique(fields=("account_id", "nope"))
        )
    with pytest.raises(TypeError, match="unique"):
        jobtable.Kind("k", int, int, unique=True)  # type: ignore[arg-type]
    assert store.list_jobs() == []


class Account(BaseModel):
    account_id: int
    name: str = Field(alias="display_name")


@dataclasses.dataclass
class AccountRow:
    account_id: int


class AccountDict(typing_extensions.TypedDict):
    account_id: int


@pytest.mark.parametrize("payload_type", [Account, AccountRow, AccountDict])
def test_a_misspelt_unique_field_is_refused_when_the_kind_is_made(payload_type: type) -> None:
    unique = jobtable.Unique(fields=("acount_id",))
    with pytest.raises(ValueError, match=r"'acc': unique field 'acount_id' is not a field") as e:
        jobtable.Kind("acc", payload_type, int, unique=unique)
    assert "account_id" in str(e.value)  # the fields it has, to pick from


def test_unique_fields_are_the_stored_names_and_a_dict_payload_is_checked_at_enqueue() -> None:
    jobtable.Kind("acc", Account, int, unique=jobtable.Unique(fields=("display_name",)))
    with pytest.raises(ValueError, match="'name' is not a field of Account"):
        jobtable.Kind("acc", Account, int, unique=jobtable.Unique(fields=("name",)))
    # A dict fixes no fields: any name is taken, and a missing one is refused at enqueue.
    jobtable.Kind("acc", dict[str, int], int, unique=jobtable.Unique(fields=("anything",)))


def test_a_batch_with_a_bad_payload_stores_none_of_its_unique_jobs(store: jobtable.Store) -> None:
    with pytest.raises(jobtable.PayloadError):
        sync.enqueue_many(store, [Sync(account_id=1), "not a sync"])  # type: ignore[list-item]
    assert store.list_jobs() == []
