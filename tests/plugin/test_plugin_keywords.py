"""Every Python keyword as a table, column and query name generates valid code.

For each engine the test writes a case whose names are all the keywords and
soft keywords, generates it, runs mypy --strict and ruff on the output, and
runs the generated Querier on a real database: the names come out escaped
(``in_``, ``None_``) and the SQL still binds and returns every column.
"""

import importlib
import keyword
import os
import pathlib
import secrets
import subprocess
import sys
import types

import psycopg
import pytest
from plugin_harness import HERE, ROOT, run_sqlc, tool, write_case

# "_" is left out: a name of no letters becomes a made-up one, not an escape.
WORDS = [*keyword.kwlist, *(w for w in keyword.softkwlist if w != "_")]


def _escaped(word: str) -> str:
    """The name the plugin must give a column or query named word, lower-cased."""
    low = word.lower()
    return low + "_" if keyword.iskeyword(low) else low


def _case(engine: str) -> tuple[str, str]:

    def ph(n: int) -> str:
        return f"${n}" if engine == "postgresql" else "?"

    text = "text" if engine == "postgresql" else "TEXT"
    schema = [f'CREATE TABLE "{w}" (id integer NOT NULL, "{w}" {text} NOT NULL);' for w in WORDS]
    columns = ", ".join(f'"{w}" {text} NOT NULL' for w in WORDS)
    schema.append(f"CREATE TABLE every (id integer NOT NULL, {columns});")
    queries = []
    for w in WORDS:
        queries.append(
            f'-- name: {w} :many\nSELECT "{w}", id FROM "{w}" ORDER BY id;\n'
            f'-- name: Put_{w} :exec\nINSERT INTO "{w}" (id, "{w}") VALUES ({ph(1)}, {ph(2)});\n'
        )
    names = ", ".join(f'"{w}"' for w in WORDS)
    marks = ", ".join(ph(i + 2) for i in range(len(WORDS)))
    queries.append(
        f"-- name: PutEvery :exec\nINSERT INTO every (id, {names}) VALUES ({ph(1)}, {marks});\n"
        f"-- name: GetEvery :one\nSELECT id, {names} FROM every;\n"
    )
    return "\n".join(schema) + "\n", "".join(queries)


def _generate(tmp_path: pathlib.Path, engine: str, package: str) -> types.ModuleType:
    schema, queries = _case(engine)
    case = write_case(tmp_path / "case", engine, schema, queries, {"emit_schema": "true"})
    done = run_sqlc(case, "generate")
    assert done.returncode == 0, done.stdout + done.stderr
    (case / "out").rename(tmp_path / package)
    env = {**os.environ, "MYPYPATH": str(HERE)}
    for args in (
        [tool("mypy"), "--strict", "--no-incremental", str(tmp_path / package)],
        [tool("ruff"), "check", "--isolated", "--ignore", "E501", str(tmp_path / package)],
        [tool("ruff"), "format", "--isolated", "--check", str(tmp_path / package)],
    ):
        checked = subprocess.run(
            args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(f"{package}.q")
    finally:
        sys.path.remove(str(tmp_path))


def _run_every_query(module: types.ModuleType, querier: object) -> None:
    for w in WORDS:
        getattr(querier, f"put_{w.lower()}")(**{"id": 1, _escaped(w): w})
        [row] = getattr(querier, _escaped(w))()
        assert (getattr(row, _escaped(w)), row.id) == (w, 1)
    fields = {_escaped(w) for w in WORDS}
    querier.put_every(id=1, **{f: f for f in fields})  # type: ignore[attr-defined]
    row = querier.get_every()  # type: ignore[attr-defined]
    assert {f: getattr(row, f) for f in fields} == {f: f for f in fields}
    assert type(row).__name__ == "Every"
    assert module.Querier is type(querier)


@pytest.mark.slow
def test_keywords_on_sqlite(tmp_path: pathlib.Path) -> None:
    import sqlite3

    module = _generate(tmp_path, "sqlite", "kw_sqlite")
    schema = importlib.import_module("kw_sqlite.schema")
    models = importlib.import_module("kw_sqlite.models")
    classes = {"None_", "True_", "False_", "In", "Class", "Def", "Match"}
    assert classes <= set(vars(models)), sorted(set(vars(models)))
    conn = sqlite3.connect(tmp_path / "k.db", isolation_level=None)
    conn.executescript(schema.SCHEMA)
    _run_every_query(module, module.Querier(conn))
    conn.close()


@pytest.mark.slow
@pytest.mark.postgres
def test_keywords_on_postgresql(tmp_path: pathlib.Path, pg_server: str) -> None:
    module = _generate(tmp_path, "postgresql", "kw_postgres")
    schema = importlib.import_module("kw_postgres.schema")
    name = f"plugin_kw_{secrets.token_hex(6)}"
    with psycopg.connect(pg_server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {name}")
        try:
            with psycopg.connect(
                pg_server, autocommit=True, options=f"-csearch_path={name}"
            ) as conn:
                conn.execute(schema.SCHEMA.encode())
                _run_every_query(module, module.Querier(conn))
        finally:
            admin.execute(f"DROP SCHEMA {name} CASCADE")
