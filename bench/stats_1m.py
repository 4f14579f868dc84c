"""How long ``jobtable stats`` takes on a big table, on each engine, in one run.

For each engine it makes a fresh database, then times, on the empty table
and again with ``--rows`` finished jobs (1M by default, bulk-loaded as
``make bench`` loads them, plus 20k queued ones; PostgreSQL is then
VACUUM ANALYZEd, as autovacuum would leave a table that size):

- ``Store.stats()`` in-process: the one pass over the table;
- ``jobtable stats --store …`` as a user runs it, a process of its own
  (interpreter start, imports, open, the query, the table);
- ``jobtable --help``: the process start alone, the floor of any command;
- ``Store.throughput()`` with every loaded row in its window: the worst
  case of the dashboard chart's query (a real hour holds far fewer).

Medians of --repeat runs; the ratios are taken within this run.

    .venv/bin/python -m bench.stats_1m                  # both engines, 1M rows
    .venv/bin/python -m bench.stats_1m --engine sqlite --rows 100000
"""

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench import _databases, _db

SCRIPT = str(Path(sys.executable).with_name("jobtable"))


def _median(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _command(*args: str) -> Callable[[], object]:
    def run() -> object:
        return subprocess.run([SCRIPT, *args], check=True, capture_output=True)

    return run


def _vacuum(db: _db.Database) -> None:
    if db.engine != "postgres":
        return
    import psycopg

    with psycopg.connect(db.target, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE jobs")


def measure(engine: str, rows: int, repeat: int) -> dict[str, float]:
    """The figures of engine, in seconds: empty table first, then with rows."""
    db = _databases.create(engine)
    try:
        figures = {
            "help": _median(_command("--help"), repeat),
            "stats.empty": _median(db.store.stats, repeat),
            "cli.empty": _median(_command("stats", "--store", db.target), repeat),
        }
        db.fill_finished(rows)
        _vacuum(db)
        db.store.stats()  # the first read pulls the pages in; the rest are measured warm
        figures["stats.full"] = _median(db.store.stats, repeat)
        figures["cli.full"] = _median(_command("stats", "--store", db.target), repeat)
        figures["json.full"] = _median(_command("stats", "--json", "--store", db.target), repeat)
        figures["throughput.full"] = _median(db.store.throughput, repeat)
        return figures
    finally:
        db.close()


def main(argv: list[str] | None = None) -> None:
    """Measures the engines asked for and prints one table each."""
    parser = argparse.ArgumentParser(prog="python -m bench.stats_1m", description=__doc__)
    parser.add_argument("--engine", action="append", choices=("sqlite", "postgres"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    for engine in args.engine or ["sqlite", "postgres"]:
        f = measure(engine, args.rows, args.repeat)
        big = f"{args.rows:,} finished + 20,000 queued rows"
        print(f"\n{engine}: medians of {args.repeat}, seconds")
        for label, key in (
            ("jobtable --help (process start alone)", "help"),
            ("Store.stats(), empty table", "stats.empty"),
            (f"Store.stats(), {big}", "stats.full"),
            ("jobtable stats, empty table", "cli.empty"),
            (f"jobtable stats, {big}", "cli.full"),
            ("jobtable stats --json, same rows", "json.full"),
            ("Store.throughput(), every row in its window", "throughput.full"),
        ):
            print(f"  {label:<62}{f[key]:8.3f}")
        print(
            f"  jobtable stats at {args.rows:,} rows / process start: "
            f"{f['cli.full'] / f['help']:.2f}x; Store.stats() is "
            f"{f['stats.full'] / f['cli.full']:.0%} of the command's time"
        )


if __name__ == "__main__":
    main()
