"""The pytest plugin's fixtures, in a pytest run of their own (pytester, in this process)."""

import re

import psycopg
import pytest

CASES = """
import datetime

import jobtable
from jobtable.testing import assert_enqueued, drain_sync

ping = jobtable.Kind("ping", int, int)


def test_store(jobtable_store):
    job_id = ping.enqueue(jobtable_store, 1)
    assert_enqueued(jobtable_store, ping, 1)
    print("TARGET", jobtable_store)


def test_clock(jobtable_store, jobtable_clock):
    print("TARGET", jobtable_store)
    assert jobtable_store.clock is jobtable_clock
    runner = jobtable.Runner(jobtable_store)
    runner.handler(ping)(lambda ctx, payload: payload)
    ping.enqueue(jobtable_store, 1, delay=datetime.timedelta(hours=1))
    assert drain_sync(runner) == []
    jobtable_clock.advance(hours=1)
    assert [r.result for r in drain_sync(runner)] == [1]


def test_each_store_is_fresh(jobtable_store):
    print("TARGET", jobtable_store)
    assert jobtable_store.counts() == {}
"""


def test_the_store_is_a_fresh_sqlite_file_by_default(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JOBTABLE_TEST_URL", raising=False)
    pytester.makepyfile(CASES)
    result = pytester.runpytest("-s", "-p", "no:asyncio")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*TARGET <jobtable.Store SQLiteEngine '*jobs.db'>*"] * 3)


def schemas(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'jobtable_test_%'"
        ).fetchall()
    return {name for (name,) in rows}


@pytest.mark.parametrize("how", ["option", "environment", "ini"])
def test_a_url_gives_each_test_a_fresh_postgresql_schema_dropped_after(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, pg_server: str, how: str
) -> None:
    monkeypatch.delenv("JOBTABLE_TEST_URL", raising=False)
    pytester.makepyfile(CASES)
    args = ["-s", "-p", "no:asyncio"]
    if how == "option":
        args.append(f"--jobtable-url={pg_server}")
    elif how == "environment":
        monkeypatch.setenv("JOBTABLE_TEST_URL", pg_server)
    else:
        pytester.makeini(f"[pytest]\njobtable_url = {pg_server}\n")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*TARGET <jobtable.Store PostgresEngine *jobtable_test_*"])
    used = set(re.findall(r"TARGET .*(jobtable_test_[0-9a-f]{12})", result.stdout.str()))
    assert len(used) == 3
    assert not used & schemas(pg_server)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://app:hunter2@127.0.0.1:5999/test", "cannot make a test schema on *5999"),
        ("sqlite:///jobs.db", "is not a postgresql:// URL (it starts 'sqlite')"),
    ],
)
def test_a_url_that_gives_no_schema_fails_naming_it_and_where_it_came_from(
    pytester: pytest.Pytester, url: str, message: str
) -> None:
    pytester.makepyfile(CASES)
    result = pytester.runpytest("-p", "no:asyncio", f"--jobtable-url={url}", "-k", "test_store")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*StoreError: jobtable's pytest plugin: *--jobtable-url*"])
    result.stdout.fnmatch_lines([f"*StoreError: jobtable's pytest plugin: *{message}*"])
    # The message hides the password (pytest's own traceback may show the URL).
    [line] = [
        line for line in result.stdout.lines if line.startswith("E ") and "StoreError" in line
    ]
    assert "hunter2" not in line


@pytest.mark.parametrize("how", ["conftest", "option"])
def test_naming_the_plugin_by_its_module_loads_it_once(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # Installed, the plugin is already loaded through its entry point; naming
    # its module again (a conftest's pytest_plugins, -p) failed with
    # "Plugin already registered under a different name".
    monkeypatch.delenv("JOBTABLE_TEST_URL", raising=False)
    pytester.makepyfile(CASES)
    args = ["-p", "no:asyncio"]
    if how == "conftest":
        pytester.makeconftest('pytest_plugins = ["jobtable.testing.pytest_plugin"]\n')
    else:
        args += ["-p", "jobtable.testing.pytest_plugin"]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=3)
