"""The application connections an enqueue can join, each opened as an application opens it.

A ``Way`` is one kind of connection on one engine: the driver's own
(sqlite3, psycopg, psycopg async) or SQLAlchemy's (Connection, Session and
their async twins). ``transaction`` opens one and hands out the object to
pass as ``conn=`` with its commit and rollback; ``block`` is the idiom that
commits at its end and rolls back on an exception (``with conn:``,
``engine.begin()``, ``session.begin()``).
"""

import asyncio
import contextlib
import dataclasses
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_scoped_session,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm import Session, scoped_session, sessionmaker
from typing_extensions import Unpack

import jobtable
from jobtable._options import EnqueueOptions


@dataclasses.dataclass
class Tx:
    """An open transaction: conn to pass to an enqueue, and how to end it."""

    conn: object
    commit: Callable[[], Awaitable[None]]
    rollback: Callable[[], Awaitable[None]]


def _sync(call: Callable[[], object]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        call()

    return run


def sqlalchemy_url(target: str, engine: str) -> str:
    """The SQLAlchemy URL of a store's target: its file, or its server with psycopg."""
    if engine == "sqlite":
        return f"sqlite:///{target}"
    return target.replace("postgresql://", "postgresql+psycopg://", 1)


@contextlib.asynccontextmanager
async def _sqlite3_tx(target: str) -> AsyncIterator[Tx]:
    conn = sqlite3.connect(target)
    try:
        yield Tx(conn, _sync(conn.commit), _sync(conn.rollback))
    finally:
        conn.close()


@contextlib.asynccontextmanager
async def _sqlite3_block(target: str) -> AsyncIterator[object]:
    with contextlib.closing(sqlite3.connect(target)) as conn, conn:
        yield conn


@contextlib.asynccontextmanager
async def _psycopg_tx(target: str) -> AsyncIterator[Tx]:
    with psycopg.connect(target) as conn:
        yield Tx(conn, _sync(conn.commit), _sync(conn.rollback))
        conn.rollback()


@contextlib.asynccontextmanager
async def _psycopg_block(target: str) -> AsyncIterator[object]:
    with psycopg.connect(target) as conn:  # commits at the end, rolls back on an exception
        yield conn


@contextlib.asynccontextmanager
async def _apsycopg_tx(target: str) -> AsyncIterator[Tx]:
    async with await psycopg.AsyncConnection.connect(target) as conn:
        yield Tx(conn, conn.commit, conn.rollback)
        await conn.rollback()


@contextlib.asynccontextmanager
async def _apsycopg_block(target: str) -> AsyncIterator[object]:
    async with await psycopg.AsyncConnection.connect(target) as conn:
        yield conn


Opener = Callable[[str], contextlib.AbstractAsyncContextManager[Any]]


def _on_engine(
    engine: str, enter: Callable[[Engine], contextlib.AbstractContextManager[Any]]
) -> Opener:
    """Opens a SQLAlchemy engine on the target, enters enter(engine), and disposes of it after."""

    @contextlib.asynccontextmanager
    async def opened(target: str) -> AsyncIterator[Any]:
        sa = create_engine(sqlalchemy_url(target, engine))
        try:
            with enter(sa) as value:
                yield value
        finally:
            sa.dispose()

    return opened


def _on_async_engine(
    enter: Callable[[AsyncEngine], contextlib.AbstractAsyncContextManager[Any]],
) -> Opener:
    """The async twin of _on_engine, on PostgreSQL."""

    @contextlib.asynccontextmanager
    async def opened(target: str) -> AsyncIterator[Any]:
        sa = create_async_engine(sqlalchemy_url(target, "postgres"))
        try:
            async with enter(sa) as value:
                yield value
        finally:
            await sa.dispose()

    return opened


@contextlib.contextmanager
def _connection_tx(sa: Engine) -> Iterator[Tx]:
    with sa.connect() as conn:
        yield Tx(conn, _sync(conn.commit), _sync(conn.rollback))


@contextlib.contextmanager
def _session_tx(sa: Engine) -> Iterator[Tx]:
    with Session(sa) as session:
        yield Tx(session, _sync(session.commit), _sync(session.rollback))


@contextlib.contextmanager
def _session_block(sa: Engine) -> Iterator[Session]:
    with Session(sa) as session, session.begin():
        yield session


@contextlib.contextmanager
def _scoped_tx(sa: Engine) -> Iterator[Tx]:
    # Flask-SQLAlchemy's db.session is a scoped_session: a registry, not a Session.
    scoped = scoped_session(sessionmaker(sa))
    try:
        yield Tx(scoped, _sync(scoped.commit), _sync(scoped.rollback))
    finally:
        scoped.remove()


@contextlib.contextmanager
def _scoped_block(sa: Engine) -> Iterator[object]:
    scoped = scoped_session(sessionmaker(sa))
    try:
        with scoped.begin():
            yield scoped
    finally:
        scoped.remove()


@contextlib.asynccontextmanager
async def _async_scoped_tx(sa: AsyncEngine) -> AsyncIterator[Tx]:
    scoped = async_scoped_session(async_sessionmaker(sa), scopefunc=asyncio.current_task)
    try:
        yield Tx(scoped, scoped.commit, scoped.rollback)
    finally:
        await scoped.remove()


@contextlib.asynccontextmanager
async def _async_scoped_block(sa: AsyncEngine) -> AsyncIterator[object]:
    scoped = async_scoped_session(async_sessionmaker(sa), scopefunc=asyncio.current_task)
    try:
        async with scoped.begin():
            yield scoped
    finally:
        await scoped.remove()


@contextlib.asynccontextmanager
async def _async_connection_tx(sa: AsyncEngine) -> AsyncIterator[Tx]:
    async with sa.connect() as conn:
        yield Tx(conn, conn.commit, conn.rollback)


@contextlib.asynccontextmanager
async def _async_session_tx(sa: AsyncEngine) -> AsyncIterator[Tx]:
    async with AsyncSession(sa) as session:
        yield Tx(session, session.commit, session.rollback)


@contextlib.asynccontextmanager
async def _async_session_block(sa: AsyncEngine) -> AsyncIterator[AsyncSession]:
    async with AsyncSession(sa) as session, session.begin():
        yield session


@dataclasses.dataclass(frozen=True)
class Way:
    """One kind of application connection on one engine."""

    name: str
    engine: str
    asynchronous: bool
    transaction: Callable[[str], contextlib.AbstractAsyncContextManager[Tx]]
    block: Opener

    async def enqueue(
        self,
        kind: jobtable.Kind[int, int],
        store: jobtable.Store,
        payload: int,
        **options: Unpack[EnqueueOptions],
    ) -> str:
        """Enqueues payload (on options' conn) with the form (sync or async) this way takes."""
        if self.asynchronous:
            return await kind.aenqueue(store, payload, **options)
        return kind.enqueue(store, payload, **options)

    async def enqueue_result(
        self,
        kind: jobtable.Kind[int, int],
        store: jobtable.Store,
        payload: int,
        **options: Unpack[EnqueueOptions],
    ) -> jobtable.EnqueueResult:
        """enqueue_result (or its async form), as the way takes it."""
        if self.asynchronous:
            return await kind.aenqueue_result(store, payload, **options)
        return kind.enqueue_result(store, payload, **options)

    async def enqueue_many(
        self,
        kind: jobtable.Kind[int, int],
        store: jobtable.Store,
        payloads: list[int],
        conn: object,
    ) -> list[str]:
        """Enqueues payloads on conn with the form (sync or async) this way takes."""
        if self.asynchronous:
            return await kind.aenqueue_many(store, payloads, conn=conn)
        return kind.enqueue_many(store, payloads, conn=conn)


WAYS = [
    Way("sqlite3", "sqlite", False, _sqlite3_tx, _sqlite3_block),
    Way(
        "sqlalchemy-connection-sqlite",
        "sqlite",
        False,
        _on_engine("sqlite", _connection_tx),
        _on_engine("sqlite", Engine.begin),
    ),
    Way(
        "sqlalchemy-session-sqlite",
        "sqlite",
        False,
        _on_engine("sqlite", _session_tx),
        _on_engine("sqlite", _session_block),
    ),
    Way(
        "sqlalchemy-scoped-session-sqlite",
        "sqlite",
        False,
        _on_engine("sqlite", _scoped_tx),
        _on_engine("sqlite", _scoped_block),
    ),
    Way("psycopg", "postgres", False, _psycopg_tx, _psycopg_block),
    Way(
        "sqlalchemy-scoped-session-postgres",
        "postgres",
        False,
        _on_engine("postgres", _scoped_tx),
        _on_engine("postgres", _scoped_block),
    ),
    Way("psycopg-async", "postgres", True, _apsycopg_tx, _apsycopg_block),
    Way(
        "sqlalchemy-connection-postgres",
        "postgres",
        False,
        _on_engine("postgres", _connection_tx),
        _on_engine("postgres", Engine.begin),
    ),
    Way(
        "sqlalchemy-session-postgres",
        "postgres",
        False,
        _on_engine("postgres", _session_tx),
        _on_engine("postgres", _session_block),
    ),
    Way(
        "sqlalchemy-async-connection",
        "postgres",
        True,
        _on_async_engine(_async_connection_tx),
        _on_async_engine(AsyncEngine.begin),
    ),
    Way(
        "sqlalchemy-async-session",
        "postgres",
        True,
        _on_async_engine(_async_session_tx),
        _on_async_engine(_async_session_block),
    ),
    Way(
        "sqlalchemy-async-scoped-session",
        "postgres",
        True,
        _on_async_engine(_async_scoped_tx),
        _on_async_engine(_async_scoped_block),
    ),
]

WAY_PARAMS = [
    pytest.param(way, id=way.name, marks=[pytest.mark.postgres] if way.engine == "postgres" else [])
    for way in WAYS
]
