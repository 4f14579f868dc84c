"""The markers that choose what runs: ``-m "not postgres"`` leaves out every PostgreSQL test.

Collected in a child pytest, so the proof covers the real hook and ``-m``
together. It names its own files: they hold tests that take the PostgreSQL
fixtures directly, ones parametrized by engine (the PostgreSQL case reaching
the server only through ``request.getfixturevalue``), and SQLite-only ones.
Two child runs at once, one per side of the marker, keep it cheap.
"""

import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [
    "tests/test_queries.py",
    "tests/conformance/test_engine.py",
    "tests/test_postgres_engine.py",
    "tests/test_sqlite_engine.py",
]


def collected(*selections: str) -> list[set[str]]:
    """The node ids child pytests collect from FILES, one child per -m selection, in parallel."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    children = [
        subprocess.Popen(
            [*command, "-m", selection, *FILES],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for selection in selections
    ]
    ids = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0, out
        ids.append({line for line in out.splitlines() if "::" in line})
    return ids


def uses_postgres(node_id: str) -> bool:
    """Whether node_id is a PostgreSQL test by its file or its engine parameter."""
    return node_id.startswith("tests/test_postgres_engine.py") or "[postgres" in node_id


def test_not_postgres_collects_no_postgres_test() -> None:
    without, only = collected("not postgres", "postgres")

    assert without.isdisjoint(only)
    assert any("[postgres" in node for node in only), "-m postgres selects the [postgres] cases"
    assert any(node.startswith("tests/test_postgres_engine.py") for node in only)
    assert not [node for node in without if uses_postgres(node)]
    assert all(uses_postgres(node) for node in only), sorted(only)
    assert any("[sqlite" in node for node in without)
    assert any(node.startswith("tests/test_sqlite_engine.py") for node in without)
