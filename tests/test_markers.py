"""The markers that choose what runs: ``-m "not postgres"`` leaves out every PostgreSQL test.

Collected in a child pytest, so the proof covers the real hook and ``-m``
together. It names its own files: they hold tests that take the PostgreSQL
fixtures directly, ones parametrized by engine (the PostgreSQL case reaching
the server only through ``request.getfixturevalue``), and SQLite-only ones.
Two child runs, one per side of the marker, keep it cheap.
"""

import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [
    "tests/test_queries.py",
    "tests/test_engine_conformance.py",
    "tests/test_postgres_engine.py",
    "tests/test_sqlite_engine.py",
]


def collected(*options: str) -> set[str]:
    """The node ids a child pytest collects from FILES with options."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, *options, *FILES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {line for line in done.stdout.splitlines() if "::" in line}


def uses_postgres(node_id: str) -> bool:
    """Whether node_id is a PostgreSQL test by its file or its engine parameter."""
    return node_id.startswith("tests/test_postgres_engine.py") or "[postgres" in node_id


def test_not_postgres_collects_no_postgres_test() -> None:
    without = collected("-m", "not postgres")
    only = collected("-m", "postgres")

    assert without.isdisjoint(only)
    assert any("[postgres" in node for node in only), "-m postgres selects the [postgres] cases"
    assert any(node.startswith("tests/test_postgres_engine.py") for node in only)
    assert not [node for node in without if uses_postgres(node)]
    assert all(uses_postgres(node) for node in only), sorted(only)
    assert any("[sqlite" in node for node in without)
    assert any(node.startswith("tests/test_sqlite_engine.py") for node in without)
