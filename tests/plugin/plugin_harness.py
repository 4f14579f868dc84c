"""Runs sqlc with our plugin on real files, for the tests of tests/plugin.

Each golden case is a directory under ``cases/`` holding a ``sqlc.yaml`` (its
plugin ``cmd`` is the bare name ``sqlc-gen-jobtable``, found on PATH, and its
``out`` is ``out``), a schema and queries. Its expected output is checked in
under ``golden/<case>/``, a package the runtime tests import by case name.
"""

import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
PLUGIN_DIR = ROOT / "plugin"
HERE = pathlib.Path(__file__).resolve().parent
CASES = HERE / "cases"
GOLDEN = HERE / "golden"
CASE_NAMES = sorted(p.name for p in CASES.iterdir() if (p / "sqlc.yaml").is_file())

# The golden packages import as top-level packages named after their case, and
# the plugin's package imports for its unit tests.
for _path in (GOLDEN, PLUGIN_DIR):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from sqlc_gen_jobtable._catalog import Field  # noqa: E402 (the path above first)
from sqlc_gen_jobtable._plan import QueryPlan  # noqa: E402
from sqlc_gen_jobtable._pytype import PyType  # noqa: E402


def query_plan(
    sql: str, command: str, params: tuple[Field, ...], columns: int = 0, driver: str = "sqlite3"
) -> QueryPlan:
    """Returns the plan of a query Q in q.sql that binds params and reads columns str columns."""
    row = tuple(Field(f"c{i}", PyType("str")) for i in range(columns))
    return QueryPlan(
        name="Q",
        filename="q.sql",
        command=command,
        driver=driver,
        models="dataclass",
        constant="Q",
        sql=sql,
        method="q",
        params=params,
        binds=params,
        slices=(),
        row_type="QRow",
        row_fields=row,
        value=None,
        classes=(),
        params_type="QParams",
        returns="None",
        comments=(),
        names=frozenset(),
    )


def tool(name: str) -> str:
    """Returns the path of a tool of the project's virtual environment."""
    return str(BIN / name)


def sqlc_env() -> dict[str, str]:
    """Returns an environment where sqlc finds the plugin by its bare name."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(PLUGIN_DIR), str(BIN), env.get("PATH", "")])
    # The plugin prepares each PostgreSQL constant on the test server.
    env.setdefault(
        "SQLC_GEN_JOBTABLE_POSTGRES_URL",
        env.get("JOBTABLE_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/test",
    )
    return env


def run_sqlc(workdir: pathlib.Path, command: str) -> subprocess.CompletedProcess[str]:
    """Runs ``sqlc <command>`` in workdir and returns the finished process."""
    return subprocess.run(
        [tool("sqlc"), command],
        cwd=workdir,
        env=sqlc_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def generate_case(case: str, workdir: pathlib.Path) -> dict[str, bytes]:
    """Generates case in a copy under workdir; returns the output files by name.

    Raises AssertionError with sqlc's output when generation fails.
    """
    copy = workdir / case
    shutil.copytree(CASES / case, copy)
    done = run_sqlc(copy, "generate")
    assert done.returncode == 0, f"sqlc generate failed for {case}:\n{done.stdout}{done.stderr}"
    return read_tree(copy / "out")


def read_tree(directory: pathlib.Path) -> dict[str, bytes]:
    """Returns every file under directory by its relative path, skipping caches."""
    return {
        path.relative_to(directory).as_posix(): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def write_case(
    directory: pathlib.Path, engine: str, schema: str, queries: str, options: dict[str, str]
) -> pathlib.Path:
    """Writes a one-file case (sqlc.yaml, schema.sql, queries/q.sql) into directory."""
    (directory / "queries").mkdir(parents=True)
    (directory / "schema.sql").write_text(schema)
    (directory / "queries" / "q.sql").write_text(queries)
    option_lines = "".join(f"          {key}: {value}\n" for key, value in options.items())
    (directory / "sqlc.yaml").write_text(
        'version: "2"\n'
        "plugins:\n"
        "  - name: jobtable\n"
        "    env: [PATH, SQLC_GEN_JOBTABLE_POSTGRES_URL, SQLC_GEN_JOBTABLE_MYSQL_URL]\n"
        "    process:\n"
        "      cmd: sqlc-gen-jobtable\n"
        "      format: json\n"
        "sql:\n"
        f"  - engine: {engine}\n"
        "    schema: schema.sql\n"
        "    queries: queries\n"
        "    codegen:\n"
        "      - plugin: jobtable\n"
        "        out: out\n" + ("        options:\n" + option_lines if options else "")
    )
    return directory
