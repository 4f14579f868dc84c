"""The application's own connection an enqueue joins: a SQLAlchemy object unwrapped to the driver's.

``kind.enqueue(store, payload, conn=conn)`` inserts on conn, inside its
transaction (the outbox pattern). conn is the driver's connection (psycopg,
sqlite3) or a SQLAlchemy Connection or Session over one; this module turns
the SQLAlchemy forms into the driver's connection, and the engine checks
that it is of its driver and reaches the store's tables.

SQLAlchemy is no dependency of jobtable: its types are looked up only in
``sys.modules``, where they are whenever the caller holds one of its objects,
so a process that never imported it never does here.
"""

import sqlite3
import sys

_SYNC_SQLALCHEMY = "sqlalchemy.orm"
_ASYNC_SQLALCHEMY = "sqlalchemy.ext.asyncio"


def _describe(conn: object) -> str:
    kind = type(conn)
    return f"{kind.__module__}.{kind.__qualname__}"


def _unscoped(conn: object) -> object:
    """The session a SQLAlchemy scoped_session (Flask-SQLAlchemy's ``db.session``) stands for.

    A scoped session is a registry that hands each thread (or task) its
    Session: the current one is the transaction the caller means. Any other
    object is returned as it is.
    """
    if _SYNC_SQLALCHEMY in sys.modules:
        from sqlalchemy.orm import scoped_session

        if isinstance(conn, scoped_session):
            return conn()
    if _ASYNC_SQLALCHEMY in sys.modules:
        from sqlalchemy.ext.asyncio import async_scoped_session

        if isinstance(conn, async_scoped_session):
            return conn()
    return conn


def _is_async_sqlalchemy(conn: object) -> bool:
    if _ASYNC_SQLALCHEMY not in sys.modules:
        return False
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession, async_scoped_session

    return isinstance(conn, AsyncConnection | AsyncSession | async_scoped_session)


def _is_sync_sqlalchemy(conn: object) -> bool:
    if "sqlalchemy" not in sys.modules:
        return False
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session, scoped_session

    return isinstance(conn, Connection | Session | scoped_session)


def driver_connection(conn: object, where: str) -> object:
    """Returns the driver's connection of conn for a synchronous enqueue.

    A SQLAlchemy Session gives its connection (which begins the session's
    transaction), and a scoped_session its current Session's; a SQLAlchemy
    Connection not yet in a transaction begins one, as its first statement
    would, so that its ``commit()`` commits the enqueue. Any other object is
    returned as it is, for the engine to check.
    Raises TypeError, naming where, for an asynchronous connection or
    session: the async forms (``aenqueue``) take those.
    """
    if _is_async_sqlalchemy(conn) or _is_async_driver(conn):
        raise TypeError(
            f"{where}: conn is asynchronous ({_describe(conn)}); "
            "pass it to the async form (aenqueue, aenqueue_many), or pass a synchronous one here"
        )
    if not _is_sync_sqlalchemy(conn):
        return conn
    from sqlalchemy.engine import Connection
    from sqlalchemy.orm import Session

    conn = _unscoped(conn)
    connection = conn.connection() if isinstance(conn, Session) else conn
    assert isinstance(connection, Connection)
    if not connection.in_transaction():
        connection.begin()
    return connection.connection.driver_connection


async def adriver_connection(conn: object, where: str) -> object:
    """Returns the driver's connection of conn for an asynchronous enqueue.

    The async twin of driver_connection, for SQLAlchemy's AsyncConnection and
    AsyncSession. Raises TypeError, naming where, for a synchronous
    connection or session: the sync forms (``enqueue``) take those.
    """
    if _is_sync_sqlalchemy(conn) or _is_sync_driver(conn):
        raise TypeError(
            f"{where}: conn is synchronous ({_describe(conn)}); "
            "pass it to the sync form (enqueue, enqueue_many), or pass an asynchronous one here"
        )
    if not _is_async_sqlalchemy(conn):
        return conn
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

    conn = _unscoped(conn)
    connection = await conn.connection() if isinstance(conn, AsyncSession) else conn
    assert isinstance(connection, AsyncConnection)
    if not connection.in_transaction():
        await connection.begin()
    raw = await connection.get_raw_connection()
    return raw.driver_connection


def in_transaction(conn: object) -> bool:
    """Whether conn (a driver's connection, or SQLAlchemy's over one) is inside a transaction.

    False for a closed connection, and for an object it cannot tell of:
    the caller then goes on as if the transaction ended.
    """
    try:
        state = getattr(conn, "in_transaction", None)  # sqlite3; SQLAlchemy's, as a method
        if callable(state):
            state = state()
    except Exception:  # a closed sqlite3 connection refuses every attribute
        return False
    if isinstance(state, bool):
        return state
    status = getattr(getattr(conn, "info", None), "transaction_status", None)  # psycopg
    return getattr(status, "name", None) in ("ACTIVE", "INTRANS", "INERROR")


def _is_async_driver(conn: object) -> bool:
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(conn, psycopg.AsyncConnection)


def _is_sync_driver(conn: object) -> bool:
    if isinstance(conn, sqlite3.Connection):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(conn, psycopg.Connection)
