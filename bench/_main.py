"""The command line: which engines, how much work, and the tables it prints.

The tables themselves are ``bench._tables``'s; the measurements
``bench._suite``'s, and with ``--peers`` ``bench._peers``'s.
"""

import argparse
import dataclasses
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bench import _databases, _db
from bench._plan import Plan, log
from bench._stats import Table, machine_details
from bench._suite import SECTIONS, run_engine
from bench._tables import engine_table, targets_table


def _revision() -> str:
    """The git commit of the code measured, and whether the work tree differed from it."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "queries", "postgres"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + (" with uncommitted changes to src/queries" if dirty else "")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="jobtable's benchmark: the runner beside the raw limit of its own SQL.",
    )
    parser.add_argument("--quick", action="store_true", help="small counts: under 2 minutes")
    parser.add_argument("--engine", choices=["sqlite", "postgres", "all"], default="all")
    parser.add_argument("--repeat", type=int, default=None, help="runs per figure (3; quick: 1)")
    parser.add_argument(
        "--only",
        action="append",
        choices=SECTIONS,
        default=[],
        help="run only this section (again for more); the other rows show -",
    )
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--pg-url", default=_db.PG_URL, help="the PostgreSQL server to use")
    parser.add_argument(
        "--peers",
        action="store_true",
        help="instead: jobtable beside huey, procrastinate and pgqueuer (needs the bench extra)",
    )
    return parser


def _machine(details: list[tuple[str, str]], markdown: bool) -> str:
    """The table of the machine and the code measured."""
    return Table("Machine", ["", ""], [[k, v] for k, v in details]).render(markdown)


def _peers(args: argparse.Namespace, engines: list[str]) -> None:
    """Prints the machine, then jobtable beside its peers on engines."""
    from bench import _peers

    began = time.perf_counter()
    sys.stdout.write(_machine([*machine_details(), ("jobtable", _revision())], args.markdown))
    sys.stdout.write("\n")
    sys.stdout.flush()
    sys.stdout.write(
        _peers.main(
            engines, args.pg_url, quick=args.quick, rounds=args.repeat, markdown=args.markdown
        )
    )
    sys.stdout.write(f"Took {time.perf_counter() - began:.0f} s.\n")


def _engine(engine: str, plan: Plan, args: argparse.Namespace) -> None:
    """Measures engine and prints its tables; an unreachable PostgreSQL server is a note."""
    out = sys.stdout
    log(f"{engine}: starting")
    try:
        db = _databases.create(engine, args.pg_url)
    except Exception as err:
        if engine != "postgres":
            raise
        note = f"PostgreSQL skipped: {_db.redacted(args.pg_url)} is unreachable ({err})"
        log(note)
        out.write(note + "\n\n")
        return
    try:
        version = db.version()
        results = run_engine(db, plan)
    finally:
        db.close()
    table = engine_table(engine, version, plan, results)
    table.notes += results.notes
    out.write(table.render(args.markdown) + "\n")
    out.write(targets_table(engine, results).render(args.markdown) + "\n")
    out.flush()


def main(argv: list[str] | None = None) -> None:
    """Runs ``python -m bench`` with argv (default: the command line's)."""
    args = _parser().parse_args(argv)
    plan = dataclasses.replace(
        Plan.make(quick=args.quick, repeat=args.repeat), only=tuple(args.only)
    )
    engines = ["sqlite", "postgres"] if args.engine == "all" else [args.engine]
    if args.peers:
        _peers(args, engines)
        return
    began = time.perf_counter()
    details = machine_details()
    details.append(("SQLite", sqlite3.sqlite_version))
    details.append(("jobtable", _revision()))
    details.append(("mode", ("quick" if plan.quick else "full") + f", --repeat {plan.repeat}"))
    if plan.only:
        details.append(("only", ", ".join(plan.only)))
    sys.stdout.write(_machine(details, args.markdown) + "\n")
    sys.stdout.flush()
    for engine in engines:
        _engine(engine, plan, args)
    sys.stdout.write(f"Took {time.perf_counter() - began:.0f} s.\n")
