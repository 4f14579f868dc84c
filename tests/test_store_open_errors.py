"""Opening a store fails fast and clearly, and a refused target is left as it was."""

import contextlib
import os
import pathlib
import secrets
import socket
import sqlite3
import stat
import threading
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest

import jobtable


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word; yields the port."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    done = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                accepted.append(listener.accept()[0])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    done.set()
    thread.join()
    for conn in accepted:
        conn.close()
    listener.close()


def open_in_thread(target: str, limit: float = 60) -> BaseException | None:
    """Runs Store.open(target) in a thread; returns what it raised, failing if it hangs."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            jobtable.Store.open(target).close()
        except BaseException as err:
            raised.append(err)
        else:
            raised.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    if thread.is_alive():
        pytest.fail(f"Store.open({target!r}) still hangs after {limit} s")
    return raised[0]


def test_a_server_that_never_answers_fails_within_the_urls_connect_timeout(
    silent_server: int,
) -> None:
    pytest.importorskip("psycopg")
    err = open_in_thread(f"postgresql://u:s3cretpw@127.0.0.1:{silent_server}/x?connect_timeout=2")
    assert isinstance(err, jobtable.StoreError)
    assert "s3cretpw" not in str(err)


@pytest.mark.slow
def test_a_server_that_never_answers_fails_within_the_default_connect_timeout(
    silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a connect_timeout anywhere, jobtable's 10 s apply, not the TCP timeout's minutes."""
    pytest.importorskip("psycopg")
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    err = open_in_thread(f"postgresql://u@127.0.0.1:{silent_server}/x", limit=60)
    assert isinstance(err, jobtable.StoreError)


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:s3cretpw@[::1:5432/x",
        "postgresql://u:s3cretpw@host:99999/x",
        "postgresql://u@host/x?password=s3cretpw&sslmode=bogus",
    ],
)
def test_a_malformed_url_is_a_store_error_without_the_password(url: str) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(jobtable.StoreError) as raised:
        jobtable.Store.open(url)
    assert "s3cretpw" not in str(raised.value)
    assert "***" in str(raised.value)


def folder_state(folder: pathlib.Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def sqlite_db(tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A jobtable SQLite database with one job, closed; write bits restored after the test."""
    path = tmp_path / "jobs.db"
    with jobtable.Store.open(path) as store:
        runner = jobtable.Runner(store)

        async def noop(ctx: jobtable.JobContext[int], payload: int) -> int:
            return payload

        runner.register("noop", noop).enqueue(1)
    yield path
    for p in (path, tmp_path):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_a_read_only_sqlite_file_is_refused_at_open_and_left_as_it_was(
    sqlite_db: pathlib.Path,
) -> None:
    """Refused by its permission bits, so even for root (who could write it) nothing is written."""
    sqlite_db.chmod(0o444)
    before = folder_state(sqlite_db.parent)
    with pytest.raises(jobtable.StoreError, match="read-only"):
        jobtable.Store.open(sqlite_db)
    assert folder_state(sqlite_db.parent) == before
    assert not (sqlite_db.parent / "jobs.db-wal").exists()


def test_a_sqlite_file_in_a_read_only_folder_is_refused_at_open(
    sqlite_db: pathlib.Path,
) -> None:
    before = folder_state(sqlite_db.parent)
    sqlite_db.parent.chmod(0o555)
    with pytest.raises(jobtable.StoreError, match="read-only"):
        jobtable.Store.open(sqlite_db)
    with pytest.raises(jobtable.StoreError, match="read-only"):
        jobtable.Store.open(sqlite_db.parent / "new.db")
    assert folder_state(sqlite_db.parent) == before


@pytest.mark.parametrize("version", [-1, -2147483648])
def test_an_unknown_sqlite_schema_version_is_refused_and_nothing_changes(
    sqlite_db: pathlib.Path, version: int
) -> None:
    with contextlib.closing(sqlite3.connect(sqlite_db, isolation_level=None)) as conn:
        conn.execute(f"PRAGMA user_version = {version:d}")
    before = folder_state(sqlite_db.parent)
    with pytest.raises(jobtable.StoreError, match=f"schema version {version} .*ever wrote"):
        jobtable.Store.open(sqlite_db)
    assert folder_state(sqlite_db.parent) == before


def pg_execute(url: str, statement: str) -> list[tuple[object, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(statement.encode())
        return cursor.fetchall() if cursor.description else []


@pytest.mark.parametrize("version", [-1, 0])
def test_an_unknown_postgres_schema_version_is_refused_and_nothing_changes(
    pg_url: str, version: int
) -> None:
    jobtable.Store.open(pg_url).close()
    pg_execute(pg_url, f"UPDATE jobtable_schema SET version = {version:d}")
    with pytest.raises(jobtable.StoreError, match=f"schema version {version} is not one"):
        jobtable.Store.open(pg_url)
    assert pg_execute(pg_url, "SELECT version FROM jobtable_schema") == [(version,)]


@pytest.mark.parametrize("quoted", [False, True], ids=["plain", "quoted-mixed-case"])
def test_the_search_path_schema_is_created_when_missing(pg_server: str, quoted: bool) -> None:
    name = f"jobtable_new_{secrets.token_hex(4)}"
    if quoted:
        name = name.replace("jobtable", "JobTable")
    spelled = f'"{name}"' if quoted else name
    url = f"{pg_server}?{urlencode({'options': f'-csearch_path={spelled}'})}"
    try:
        with jobtable.Store.open(url) as store:
            runner = jobtable.Runner(store)

            async def noop(ctx: jobtable.JobContext[int], payload: int) -> int:
                return payload

            job_id = runner.register("noop", noop).enqueue(1)
            assert runner.get(job_id).status is jobtable.Status.QUEUED
        tables = pg_execute(
            pg_server,
            f"SELECT tablename FROM pg_tables WHERE schemaname = '{name}' ORDER BY 1",
        )
        assert ("jobs",) in tables
    finally:
        pg_execute(pg_server, f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def test_connect_timeout_from_the_environment_is_left_alone(
    silent_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "2")
    err = open_in_thread(f"postgresql://u@127.0.0.1:{silent_server}/x")
    assert isinstance(err, jobtable.StoreError)
    assert os.environ["PGCONNECT_TIMEOUT"] == "2"


def test_a_pooled_url_refuses_a_session_setting_before_connecting() -> None:
    with pytest.raises(ValueError, match="ALTER ROLE name SET synchronous_commit"):
        jobtable.Store.open("postgresql://app@127.0.0.1:1/app", pooled=True, durable=False)


def test_the_pooler_options_are_refused_for_a_sqlite_file(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="are for a PostgreSQL URL"):
        jobtable.Store.open(tmp_path / "jobs.db", pooled=True)
    with pytest.raises(ValueError, match="are for a PostgreSQL URL"):
        jobtable.Store.open(tmp_path / "jobs.db", listen_url="postgresql://h/db")
    assert not (tmp_path / "jobs.db").exists()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("pooled", "0", r"pooled is '0' \(str\), want True or False"),
        ("pooled", 1, r"pooled is 1 \(int\), want True or False"),
        ("max_connections", "10", r"max_connections is '10' \(str\), want an int"),
        ("max_connections", True, r"max_connections is True \(bool\), want an int"),
        ("listen_url", b"postgresql://h/db", "listen_url is a bytes, want a postgresql:// URL"),
    ],
)
def test_pooler_options_of_another_type_are_refused_naming_the_option(
    tmp_path: pathlib.Path, option: str, value: object, message: str
) -> None:
    # Before connecting (the port is closed) and before a SQLite file is made.
    for target in ("postgresql://app@127.0.0.1:1/app", tmp_path / "jobs.db"):
        with pytest.raises(TypeError, match=message):
            jobtable.Store.open(target, **{option: value})  # type: ignore[arg-type]
    assert not (tmp_path / "jobs.db").exists()
