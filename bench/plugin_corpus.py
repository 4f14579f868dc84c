"""How much of sqlc's own end-to-end corpus the plugin turns into checked Python.

Given sqlc's ``internal/endtoend/testdata`` folder (from a checkout of sqlc),
it counts every case folder where sqlc-gen-go generates code: one holding a
``sqlc.json`` and the ``.go`` files sqlc-gen-go wrote, and neither a
``stderr.txt`` nor an ``exec.json`` saying that sqlc fails, runs another
command or needs a managed database. Each such case runs in a scratch copy
with each ``sql`` entry's code generation swapped for the plugin (driver
``sqlite3``, ``psycopg`` with ``emit_async``, or ``pymysql`` with
``emit_async``; the Go options, renames and overrides dropped). A case that
this sqlc (the one in .venv) cannot parse with the case's own config either
is left out too. Cases with
the same config and SQL files (sqlc repeats one per Go driver) run once.

The plugin's SQL checks run as they do for a user: SQLite always,
PostgreSQL on ``SQLC_GEN_JOBTABLE_POSTGRES_URL`` (this script sets the test
server's unless it is set), MySQL on ``SQLC_GEN_JOBTABLE_MYSQL_URL`` when it
is set, or on a throwaway MariaDB server with ``--mysql-server``. Every
output then goes through one ``mypy --strict`` and one ``ruff check``. It
prints, per engine: the cases, how many generated, how many of those pass
both tools, how many the plugin refused (grouped by the
first line of its message) and how many crashed it.

    .venv/bin/python -m bench.plugin_corpus /path/to/sqlc/internal/endtoend/testdata
"""

import argparse
import collections
import contextlib
import hashlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
PLUGIN_DIR = ROOT / "plugin"
CONFIG = "sqlc.json"
DRIVERS = {
    "sqlite": {"driver": "sqlite3"},
    "postgresql": {"driver": "psycopg", "emit_async": True},
    "mysql": {"driver": "pymysql", "emit_async": True},
}
"""The plugin's options per engine; other engines are not counted."""

OUT = "jobtable_out"
"""The folder, inside each scratch copy, the plugin writes to."""


@dataclass
class Case:
    """One config of the corpus, and what became of it."""

    name: str
    engine: str = ""
    outcome: str = ""
    """excluded, refused, crashed or generated."""
    reason: str = ""
    package: str = ""
    """The name of the generated package in the shared output tree."""
    problems: list[str] = field(default_factory=list)
    """mypy and ruff messages on the generated code."""


def environment() -> dict[str, str]:
    """sqlc's environment: the plugin on PATH, the test PostgreSQL for its checks."""
    env = dict(os.environ)
    plugin = env.get("PLUGIN_CORPUS_PLUGIN_DIR", str(PLUGIN_DIR))
    env["PATH"] = os.pathsep.join([plugin, str(BIN), env.get("PATH", "")])
    env.setdefault("SQLC_GEN_JOBTABLE_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    return env


def sqlc(folder: Path) -> subprocess.CompletedProcess[str]:
    """Runs ``sqlc generate`` in folder."""
    return subprocess.run(
        [str(BIN / "sqlc"), "generate"],
        cwd=folder,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def why_excluded(folder: Path) -> str | None:
    """Why the case at folder is not one sqlc-gen-go generates, judged from its files."""
    if (folder / "stderr.txt").exists():
        return "sqlc is expected to fail (stderr.txt)"
    exec_file = folder / "exec.json"
    if exec_file.exists():
        spec = json.loads(exec_file.read_text())
        if spec.get("command", "generate") != "generate" or spec.get("env"):
            return "not a plain generate (exec.json)"
        if "managed-db" in spec.get("contexts", []):
            return "needs a managed database (exec.json)"
    if not (folder / CONFIG).exists():
        return "config is not sqlc.json"
    if not any(folder.rglob("*.go")):
        return "sqlc-gen-go writes no Go"
    return None


def entries(config: dict[str, object]) -> list[dict[str, object]]:
    """The config's sql entries, as version 2 spells them."""
    if config.get("version") == "1":
        packages = config.get("packages")
        return [dict(p) for p in packages] if isinstance(packages, list) else []
    sql = config.get("sql")
    return [dict(e) for e in sql] if isinstance(sql, list) else []


def plugin_config(config: dict[str, object]) -> tuple[dict[str, object], str]:
    """The config rewritten to run the plugin, and the engine it runs on."""
    rewritten: list[dict[str, object]] = []
    engines = []
    for index, entry in enumerate(entries(config)):
        engine = str(entry.get("engine", "postgresql"))
        engines.append(engine)
        kept: dict[str, object] = {
            k: entry[k] for k in ("schema", "queries", "analyzer") if k in entry
        }
        kept["engine"] = engine
        out = OUT if index == 0 else f"{OUT}_{index}"
        kept["codegen"] = [{"plugin": "jobtable", "out": out, "options": DRIVERS.get(engine, {})}]
        rewritten.append(kept)
    plugins = [
        {
            "name": "jobtable",
            # sqlc passes a plugin only the variables listed.
            "env": ["PATH", "SQLC_GEN_JOBTABLE_POSTGRES_URL", "SQLC_GEN_JOBTABLE_MYSQL_URL"],
            "process": {"cmd": "sqlc-gen-jobtable", "format": "json"},
        }
    ]
    engine = engines[0] if len(set(engines)) == 1 else "mixed"
    return {"version": "2", "plugins": plugins, "sql": rewritten}, engine


def inputs_key(source: Path, rewritten: dict[str, object]) -> str:
    """What the plugin's run depends on: the rewritten config and every input file.

    sqlc's corpus repeats a case per Go driver (pgx/v4, pgx/v5, stdlib) with
    the same schema and queries; those run once.
    """
    digest = hashlib.sha256(json.dumps(rewritten, sort_keys=True).encode())
    for path in sorted(source.rglob("*")):
        if path.is_file() and path.suffix == ".sql":
            digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def go_generates(source: Path, scratch: Path) -> bool:
    """Whether this sqlc, with the case's own config, writes Go for it."""
    shutil.copytree(source, scratch, ignore=shutil.ignore_patterns("*.go"))
    return sqlc(scratch).returncode == 0 and any(scratch.rglob("*.go"))


def first_refusal(stderr: str) -> tuple[str, str]:
    """The outcome (refused or crashed) and the first line of the plugin's message."""
    if "Traceback" in stderr:
        last = [line for line in stderr.splitlines() if line.strip()][-1]
        return "crashed", last.strip()
    for line in stderr.splitlines():
        if "sqlc-gen-jobtable: " in line and "warning:" not in line:
            return "refused", line.split("sqlc-gen-jobtable: ", 1)[1].strip()
    lines = stderr.strip().splitlines()
    return "refused", "sqlc: " + (lines[-1] if lines else "?")


def prepare(case: Case, source: Path) -> dict[str, object] | None:
    """The plugin's config for the case at source, or None when it is excluded."""
    reason = why_excluded(source)
    if reason is not None:
        case.outcome, case.reason = "excluded", reason
        return None
    rewritten, case.engine = plugin_config(json.loads((source / CONFIG).read_text()))
    return rewritten


def run_case(case: Case, source: Path, rewritten: dict[str, object], work: Path) -> None:
    """Runs the plugin on one case; fills in case, its output under work/tree."""
    scratch = work / "py" / case.package
    shutil.copytree(source, scratch, ignore=shutil.ignore_patterns("*.go"))
    (scratch / CONFIG).write_text(json.dumps(rewritten, indent=2))
    done = sqlc(scratch)
    if done.returncode != 0:
        case.outcome, case.reason = first_refusal(done.stderr)
        if case.reason.startswith("sqlc: ") and not go_generates(
            source, work / "go" / case.package
        ):
            case.outcome, case.reason = "excluded", "this sqlc fails with sqlc-gen-go too"
        return
    case.outcome = "generated"
    for out in sorted(scratch.glob(OUT + "*")):
        shutil.copytree(out, work / "tree" / case.package / out.name)
        (work / "tree" / case.package / "__init__.py").touch()


def measure(corpus: Path, folders: list[Path], jobs: int, work: Path) -> list[Case]:
    """Runs every case at folders (each distinct input once); returns them all."""
    cases = [Case(name=str(f.relative_to(corpus)), package=f"c{i}") for i, f in enumerate(folders)]
    first: dict[str, Case] = {}
    repeats: list[tuple[Case, Case]] = []
    runs = []
    for case, folder in zip(cases, folders, strict=True):
        rewritten = prepare(case, folder)
        if rewritten is None:
            continue
        key = inputs_key(folder, rewritten)
        if key in first:
            repeats.append((case, first[key]))
        else:
            first[key] = case
            runs.append((case, folder, rewritten))
    (work / "tree").mkdir()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(lambda run: run_case(run[0], run[1], run[2], work), runs))
    for package, found in problems_by_package(work / "tree").items():
        cases[int(package[1:])].problems = found
    for case, same in repeats:
        case.outcome, case.reason, case.problems = same.outcome, same.reason, same.problems
    return cases


def problems_by_package(tree: Path) -> dict[str, list[str]]:
    """mypy --strict and ruff check over tree: each message under its package."""
    found: dict[str, list[str]] = collections.defaultdict(list)
    if not any(tree.iterdir()):
        return found
    mypy = [str(BIN / "mypy"), "--strict", "--no-incremental", "--explicit-package-bases", "."]
    ruff = [str(BIN / "ruff"), "check", "--isolated", "--output-format=concise", "."]
    ruff += ["--extend-select", "E101,E741,E742,E743,W291,W293"]
    for command in (mypy, ruff):
        done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
        for line in done.stdout.splitlines():
            match = re.match(r"(c\d+)[/\\]\S+?:\d+:(\d+:)? (error|\w+\d+)", line)
            if match:
                found[match.group(1)].append(line)
    # ruff format at its default line length: a file it would change is a problem.
    fmt = [str(BIN / "ruff"), "format", "--isolated", "--check", "--output-format=concise", "."]
    done = subprocess.run(fmt, cwd=tree, capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        match = re.match(r"(c\d+)[/\\]([^:\s]+):\d+:\d+: unformatted", line)
        if match:
            found[match.group(1)].append(
                f"{match.group(1)}/{match.group(2)}: not as ruff formats it"
            )
    return found


def summary(cases: list[Case]) -> str:
    """The table per engine, then the refusals and crashes grouped by message."""
    lines = [
        "engine | cases | generated | pass mypy+ruff | refused | crashed",
        "---|---|---|---|---|---",
    ]
    engines = sorted({c.engine for c in cases if c.outcome != "excluded"})
    for engine in engines:
        mine = [c for c in cases if c.engine == engine]
        counts = collections.Counter(c.outcome for c in mine)
        passing = sum(1 for c in mine if c.outcome == "generated" and not c.problems)
        lines.append(
            f"{engine} | {len(mine)} | {counts['generated']} | {passing} | "
            f"{counts['refused']} | {counts['crashed']}"
        )
    excluded = collections.Counter(c.reason.split(":")[0] for c in cases if c.outcome == "excluded")
    lines.append(
        f"\nexcluded (sqlc-gen-go makes nothing): {sum(excluded.values())} {dict(excluded)}"
    )
    for engine in engines:
        grouped = collections.Counter(
            f"{c.outcome}: {c.reason}" for c in cases if c.engine == engine and c.reason
        )
        for reason, count in sorted(grouped.items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"{engine}: {count} x {reason[:160]}")
        for case in cases:
            if case.engine == engine and case.problems:
                lines.append(f"{engine}: fails checks: {case.name}: {case.problems[0][:160]}")
    return "\n".join(lines)


def case_folders(corpus: Path) -> list[Path]:
    """Every folder of the corpus holding a sqlc config, in name order."""
    names = ("sqlc.json", "sqlc.yaml", "sqlc.yml")
    return sorted({p.parent for name in names for p in corpus.rglob(name)})


def main() -> None:
    """Measures the corpus named on the command line and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="sqlc's internal/endtoend/testdata folder")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once")
    parser.add_argument("--only", default="", help="only case folders whose path contains this")
    parser.add_argument("--plugin", type=Path, help="the plugin's folder (default: plugin/)")
    parser.add_argument(
        "--mysql-server",
        action="store_true",
        help="check MySQL SQL on a throwaway MariaDB server (tests/mysql_server.py)",
    )
    parser.add_argument(
        "--asyncpg", action="store_true", help="PostgreSQL with driver asyncpg instead of psycopg"
    )
    parser.add_argument("--verbose", action="store_true", help="also list every case's outcome")
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    if args.asyncpg:
        DRIVERS["postgresql"] = {"driver": "asyncpg"}
    if args.plugin:
        os.environ["PLUGIN_CORPUS_PLUGIN_DIR"] = str(args.plugin.resolve())
    folders = [f for f in case_folders(corpus) if args.only in str(f.relative_to(corpus))]
    with contextlib.ExitStack() as stack:
        if args.mysql_server:
            sys.path.insert(0, str(ROOT / "tests"))
            server = stack.enter_context(importlib.import_module("mysql_server").throwaway_server())
            os.environ["SQLC_GEN_JOBTABLE_MYSQL_URL"] = f"mysql://root@127.0.0.1:{server.port}/"
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="plugin-corpus-"))
        cases = measure(corpus, folders, args.jobs, Path(scratch))
    if args.verbose:
        for case in cases:
            print(f"{case.name}: {case.engine} {case.outcome} {case.reason} {case.problems[:1]}")
    print(summary(cases))


if __name__ == "__main__":
    main()
