"""The engine's other fronts: the application's own transaction, and listening for commits.

``write_in`` and ``read_in`` join a transaction of the driver's connection
(sqlite3, psycopg); their async forms take psycopg's async connection, and
SQLite, whose driver has none, refuses them with a TypeError saying to use
the sync form. ``listen`` and ``listen_ended`` call back, from a thread of
their own, after another engine's commit; a case waits on an event for
them, with a limit only a broken engine reaches.
"""

import sqlite3
import threading

import psycopg
import pytest
from seam import claim, create, exists, get, now

from conformance.engine_kits import LIMIT, Kit, covers
from jobtable._engines.base import EndedJobs, Engine
from jobtable._engines.rows import Outcome


def connect(kit: Kit, target: str) -> sqlite3.Connection | psycopg.Connection[tuple[object, ...]]:
    """The application's own connection to the test's database, as its driver opens it."""
    if kit.name == "sqlite":
        return sqlite3.connect(target)
    return psycopg.connect(target)


@covers("write_in", "read_in")
def test_writes_in_the_applications_transaction_land_at_its_commit(
    opened: Engine, kit: Kit, store_target: str
) -> None:
    conn = connect(kit, store_target)
    try:
        opened.write_in(conn, create("a"), "test")
        seen = opened.read_in(conn, get("a"), "test")
        assert seen is not None
        assert not exists(opened, "a")
        conn.commit()
        opened.write_in(conn, create("b"), "test")
        conn.rollback()
    finally:
        conn.close()
    assert exists(opened, "a")
    assert not exists(opened, "b")


@covers("awrite_in", "aread_in")
async def test_async_writes_join_an_async_transaction_or_are_refused(
    opened: Engine, kit: Kit, store_target: str
) -> None:
    if kit.name == "sqlite":
        conn = sqlite3.connect(store_target)
        try:
            with pytest.raises(TypeError, match="sync form"):
                await opened.awrite_in(conn, create("a"), "test")
            with pytest.raises(TypeError, match="sync form"):
                await opened.aread_in(conn, get("a"), "test")
        finally:
            conn.close()
        assert not exists(opened, "a")
        return
    async with await psycopg.AsyncConnection.connect(store_target) as aconn:
        await opened.awrite_in(aconn, create("a"), "test")
        seen = await opened.aread_in(aconn, get("a"), "test")
        assert seen is not None
        assert not exists(opened, "a")
        await aconn.commit()
    assert exists(opened, "a")


@covers("listen")
def test_another_engines_enqueue_wakes_a_listener(opened: Engine, kit: Kit) -> None:
    woken = threading.Event()
    stop = opened.listen(woken.set)
    other = kit.open()
    try:
        assert stop is not None
        other.write(create("a"))
        assert woken.wait(LIMIT)
    finally:
        other.close()
        if stop is not None:
            stop()


@covers("listen_ended")
def test_another_engines_end_of_a_job_wakes_a_waiter(opened: Engine, kit: Kit) -> None:
    assert isinstance(opened, EndedJobs)
    ended: list[str] = []
    woken = threading.Event()

    def wake(ids: str) -> None:
        ended.append(ids)
        woken.set()

    other = kit.open()
    other.write(create("a"))
    claim(other, 1)
    stop = opened.listen_ended(wake)
    try:
        assert stop is not None
        done = Outcome("a", 1, "succeeded", None, None, None)
        other.write(
            lambda q: q.finish_and_claim_jobs(
                outcomes=[done], runner="r", queue="default", now=now(), max_jobs=0
            )
        )
        assert woken.wait(LIMIT)
        assert any(ids == "" or "a" in ids.split("\n") for ids in ended), ended
    finally:
        other.close()
        if stop is not None:
            stop()
