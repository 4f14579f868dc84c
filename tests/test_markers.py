"""The markers that choose what runs: ``-m "not postgres"`` leaves out every PostgreSQL test.

Collected in a child pytest, so the proof covers the real hook and ``-m``
together. It names its own files: they hold tests that take the PostgreSQL
fixtures directly, ones parametrized by engine (the PostgreSQL case reaching
the server only through ``request.getfixturevalue``), and SQLite-only ones.
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
    "tests/runner/test_lifecycle_machine.py",
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
    every = collected()
    without = collected("-m", "not postgres")
    only = collected("-m", "postgres")

    postgres = {node for node in every if uses_postgres(node)}
    assert any("[postgres" in node for node in postgres), "the files have engine-parametrized tests"
    assert any(node.startswith("tests/test_postgres_engine.py") for node in postgres)
    assert without.isdisjoint(postgres), sorted(without & postgres)
    assert postgres <= only
    # Nothing is lost either way: each test is in exactly one of the two runs.
    assert without | only == every
    assert without.isdisjoint(only)
    assert any("[sqlite" in node for node in without)
