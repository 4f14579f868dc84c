"""Assertions that a job was, or was not, enqueued: by kind and payload, exact or partial."""

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Generic, TypedDict, TypeVar

import pydantic_core
from typing_extensions import Unpack

from jobtable._engines.base import Queries
from jobtable._errors import PayloadError
from jobtable._job import JobRecord, Status, record_from_row
from jobtable._kind import Kind
from jobtable._operations import ListJobs
from jobtable._runner.runner import Runner
from jobtable._store import Store
from jobtable._transaction import (
    _is_async_driver,
    _is_async_sqlalchemy,
    adriver_connection,
    driver_connection,
)

P = TypeVar("P")
R = TypeVar("R")


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY: Final[Any] = _Any()
"""Matches any payload: the default of assert_enqueued's payload."""


class Criteria(TypedDict, Generic[P], total=False):
    """What else a job must match, besides its kind and payload (see assert_enqueued)."""

    like: Mapping[str, object]
    where: Callable[[P], bool]
    queue: str
    priority: int
    status: Status | str


_PAGE = 1000
_SHOWN = 20
"""How many jobs an assertion message lists."""


def _store(where: str, target: Store | Runner) -> Store:
    if isinstance(target, Runner):
        return target.store
    if not isinstance(target, Store):
        raise TypeError(f"{where}: want a Store or a Runner, got {type(target).__name__}")
    return target


def _matches(like: object, value: object) -> bool:
    """Whether value has like's shape: every key of a mapping, recursively; else equal."""
    if isinstance(like, Mapping):
        return isinstance(value, dict) and all(
            key in value and _matches(item, value[key]) for key, item in like.items()
        )
    if isinstance(like, list | tuple):
        return (
            isinstance(value, list)
            and len(like) == len(value)
            and all(_matches(a, b) for a, b in zip(like, value, strict=True))
        )
    return like == value


@dataclasses.dataclass(frozen=True)
class _Wanted:
    """What an assertion looks for, with the stored form of its payload."""

    kind: str
    decode: Callable[[str], object]
    payload: object
    like: Mapping[str, object] | None
    where: Callable[[Any], bool] | None
    queue: str | None
    priority: int | None
    status: Status | None

    @classmethod
    def of(
        cls, verb: str, kind: Kind[Any, Any] | str, payload: object, criteria: Criteria[Any]
    ) -> "_Wanted":
        if isinstance(kind, Kind):
            name = kind.name
            codec = kind._codec
            # A record's secrets are masked: so is the payload it is compared with.
            decode: Callable[[str], object] = functools.partial(codec.decode_payload, keys=None)
            if payload is not ANY:
                try:
                    stored = codec.shown_payload(payload)
                except PayloadError as err:
                    raise PayloadError(f"{verb}: {err}") from err
                payload = pydantic_core.from_json(stored)
        elif isinstance(kind, str) and kind:
            name = kind
            decode = pydantic_core.from_json
            if payload is not ANY:
                payload = pydantic_core.to_jsonable_python(payload)
        else:
            raise TypeError(f"{verb}: want a jobtable.Kind or a kind name, got {kind!r}")
        unknown = set(criteria) - set(Criteria.__annotations__)
        if unknown:
            raise TypeError(f"{verb} {name!r}: unknown criteria {sorted(unknown)}")
        like = criteria.get("like")
        where = criteria.get("where")
        status = criteria.get("status")
        if like is not None and not isinstance(like, Mapping):
            raise TypeError(f"{verb} {name!r}: like must be a mapping, got {like!r}")
        if where is not None and not callable(where):
            raise TypeError(f"{verb} {name!r}: where must be callable, got {where!r}")
        return cls(
            name,
            decode,
            payload,
            like,
            where,
            criteria.get("queue"),
            criteria.get("priority"),
            None if status is None else Status(status),
        )

    def __str__(self) -> str:
        parts = [f"a {self.kind!r} job"]
        if self.payload is not ANY:
            parts.append(f"with payload {_json(self.payload)}")
        if self.like is not None:
            parts.append(f"with a payload like {_json(self.like)}")
        if self.where is not None:
            parts.append(f"whose payload passes {getattr(self.where, '__name__', self.where)}")
        for option in ("queue", "priority", "status"):
            value = getattr(self, option)
            if value is not None:
                parts.append(f"{option} {str(value)!r}")
        return " ".join(parts)

    def match(self, record: JobRecord) -> bool:
        if record.kind != self.kind:
            return False
        if self.queue is not None and record.queue != self.queue:
            return False
        if self.priority is not None and record.priority != self.priority:
            return False
        if self.status is not None and record.status is not self.status:
            return False
        if self.payload is not ANY and record.payload != self.payload:
            return False
        if self.like is not None and not _matches(self.like, record.payload):
            return False
        if self.where is not None:
            try:
                decoded = self.decode(pydantic_core.to_json(record.payload).decode())
            except ValueError:
                return False  # not a payload of this kind's type: it cannot pass
            return bool(self.where(decoded))
        return True


def _json(value: object) -> str:
    return pydantic_core.to_json(value).decode()


def _listing(records: Sequence[JobRecord], kind: str) -> str:
    """The jobs an assertion saw, for its message: the kind's, then how many of each other."""
    same = [r for r in records if r.kind == kind]
    others: dict[str, int] = {}
    for record in records:
        if record.kind != kind:
            others[record.kind] = others.get(record.kind, 0) + 1
    if not same:
        text = f"no {kind!r} job was enqueued"
    else:
        lines = [
            f"  {r.id} {r.status} queue={r.queue!r} priority={r.priority} "
            f"payload={_json(r.payload)}"
            for r in same[:_SHOWN]
        ]
        if len(same) > _SHOWN:
            lines.append(f"  ... and {len(same) - _SHOWN} more")
        text = f"{len(same)} {kind!r} job(s) were enqueued:\n" + "\n".join(lines)
    if others:
        text += "\nand of other kinds: " + ", ".join(
            f"{k} ({n})" for k, n in sorted(others.items())
        )
    return text


class _AllJobs:
    """The read of every job, oldest first, page by page in one transaction."""

    __slots__ = ()

    def __call__(self, q: Queries) -> list[JobRecord]:
        records: list[JobRecord] = []
        before = (1 << 63) - 1
        while True:
            page = ListJobs(before, None, None, None, _PAGE)(q)
            records += [record_from_row(row) for row in page]
            if len(page) < _PAGE:
                return records[::-1]
            before = page[-1].seq


def _verdict(
    verb: str, wanted: _Wanted, records: Sequence[JobRecord], count: int | None
) -> JobRecord:
    found = [r for r in records if wanted.match(r)]
    if found and (count is None or len(found) == count):
        return found[0]
    expected = f"exactly {count} of " if count is not None else ""
    got = f"; {len(found)} matched" if count is not None else ""
    raise AssertionError(
        f"{verb}: expected {expected}{wanted}{got}; {_listing(records, wanted.kind)}"
    )


def _absent(verb: str, wanted: _Wanted, records: Sequence[JobRecord]) -> None:
    found = [r for r in records if wanted.match(r)]
    if found:
        raise AssertionError(
            f"{verb}: expected no {str(wanted).removeprefix('a ')}, but {len(found)} matched; "
            f"{_listing(records, wanted.kind)}"
        )


def _count(count: int | None) -> int | None:
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ValueError(f"assert_enqueued: count must be a positive int or None, got {count!r}")
    return count


def _read_in(verb: str, store: Store, conn: object) -> list[JobRecord]:
    """Every job as conn's transaction sees it, its uncommitted enqueues included."""
    if _is_async_sqlalchemy(conn) or _is_async_driver(conn):
        raise TypeError(
            f"{verb}: conn is asynchronous ({type(conn).__qualname__}); pass it to the async "
            "form (aassert_enqueued, aassert_not_enqueued, aenqueued), or pass a synchronous one"
        )
    return store.engine.read_in(driver_connection(conn, verb), _AllJobs(), verb)


def enqueued(target: Store | Runner, *, conn: object = None) -> list[JobRecord]:
    """Returns the record of every job in the store, oldest first, whatever its status.

    Args:
        target: The store, or a runner of it.
        conn: The application's own synchronous connection to the store's
            database (sqlite3, psycopg, or a SQLAlchemy Connection or Session
            over one): the jobs are read inside its transaction, so those it
            enqueued and has not committed are there too.

    Returns:
        Every job's record, oldest first.

    Raises:
        TypeError: conn cannot reach the store's jobs table, as ``enqueue(...,
            conn=)`` checks it (the wrong driver, or an async one: use
            aenqueued).
        ValueError: conn reaches another database or file.
    """
    return _records("enqueued", target, conn)


def _records(verb: str, target: Store | Runner, conn: object) -> list[JobRecord]:
    store = _store(verb, target)
    if conn is not None:
        return _read_in(verb, store, conn)
    return store.engine.read(_AllJobs())


async def _arecords(verb: str, target: Store | Runner, conn: object) -> list[JobRecord]:
    store = _store(verb, target)
    if conn is None:
        return await store.engine.aread(_AllJobs())
    if _is_async_sqlalchemy(conn) or _is_async_driver(conn):
        return await store.engine.aread_in(await adriver_connection(conn, verb), _AllJobs(), verb)
    return _read_in(verb, store, conn)


async def aenqueued(target: Store | Runner, *, conn: object = None) -> list[JobRecord]:
    """The async form of enqueued; conn may also be an asynchronous connection or session.

    An async conn (psycopg.AsyncConnection, SQLAlchemy's AsyncConnection or
    AsyncSession) is read in its transaction as enqueued reads a sync one;
    a sync one is read at once, on the calling thread.
    """
    return await _arecords("enqueued", target, conn)


def assert_enqueued(
    target: Store | Runner,
    kind: Kind[P, R] | str,
    payload: P = ANY,
    /,
    *,
    count: int | None = None,
    conn: object = None,
    **criteria: Unpack[Criteria[P]],
) -> JobRecord:
    """Asserts that a job of kind matching everything given is in the store; returns it.

    Any status counts by default: a job enqueued and then run still was
    enqueued.

    Args:
        target: The store, or a runner of it.
        kind: A Kind, whose payload type payload must be (compared as stored,
            so a model equals its stored JSON), or a kind name, with payload as
            JSON data.
        payload: The payload the job must have; ``ANY`` matches every payload.
        count: Exactly that many jobs must match; None is at least one.
        conn: The jobs are read inside conn's transaction, its uncommitted
            enqueues included (see ``enqueued``).
        **criteria: ``like``, a partial match on the stored JSON (every key it
            gives, recursively, must be there with that value); ``where``, a
            predicate on the payload decoded as the kind's P (JSON data for a
            name); ``queue``, ``priority`` and ``status``, which must equal the
            job's.

    Returns:
        The oldest match.

    Raises:
        AssertionError: No job matches (listing the jobs of kind that were
            enqueued instead), or not count of them.
        TypeError: A bad argument or conn, named.
        ValueError: A bad argument or conn, named.
    """
    verb = "assert_enqueued"
    wanted = _Wanted.of(verb, kind, payload, criteria)
    return _verdict(verb, wanted, _records(verb, target, conn), _count(count))


async def aassert_enqueued(
    target: Store | Runner,
    kind: Kind[P, R] | str,
    payload: P = ANY,
    /,
    *,
    count: int | None = None,
    conn: object = None,
    **criteria: Unpack[Criteria[P]],
) -> JobRecord:
    """The async form of assert_enqueued."""
    verb = "assert_enqueued"
    wanted = _Wanted.of(verb, kind, payload, criteria)
    return _verdict(verb, wanted, await _arecords(verb, target, conn), _count(count))


def assert_not_enqueued(
    target: Store | Runner,
    kind: Kind[P, R] | str,
    payload: P = ANY,
    /,
    *,
    conn: object = None,
    **criteria: Unpack[Criteria[P]],
) -> None:
    """Asserts that no job matches what assert_enqueued would; else raises AssertionError.

    Args:
        target: The store, or a runner of it.
        kind: A Kind or a kind name, as assert_enqueued takes it.
        payload: The payload; ``ANY`` matches every payload.
        conn: The jobs are read inside conn's transaction (see ``enqueued``).
        **criteria: As assert_enqueued takes them.

    Raises:
        AssertionError: A job matches (naming it).
        TypeError: A bad argument or conn, named.
        ValueError: A bad argument or conn, named.
    """
    verb = "assert_not_enqueued"
    wanted = _Wanted.of(verb, kind, payload, criteria)
    _absent(verb, wanted, _records(verb, target, conn))


async def aassert_not_enqueued(
    target: Store | Runner,
    kind: Kind[P, R] | str,
    payload: P = ANY,
    /,
    *,
    conn: object = None,
    **criteria: Unpack[Criteria[P]],
) -> None:
    """The async form of assert_not_enqueued."""
    verb = "assert_not_enqueued"
    wanted = _Wanted.of(verb, kind, payload, criteria)
    _absent(verb, wanted, await _arecords(verb, target, conn))
