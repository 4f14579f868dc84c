"""Runners under a pinned xmin, beside runners without: jobs per second and enqueue-to-start time.

    .venv/bin/python -m bench.pinned_load                 # 20 s warm, 120 s pinned, 60 s after
    .venv/bin/python -m bench.pinned_load --from-head     # claims from the queue's head, as before

A throwaway cluster of its own (as ``bench.restart`` makes one) with two
databases alike, each with jobtable's schema, a worker process
(``bench._soak_child``, ``--workers`` workers, no-op jobs) and an enqueuer
thread in this process offering ``--rate`` jobs a second. After a warm-up,
a REPEATABLE READ transaction that read the jobs table stays open in one
of them for ``--pinned`` seconds; PostgreSQL's horizon is per database, so
the other is the clean baseline, and both run at once, under the same load.
Every WINDOW seconds it prints, for each, the jobs finished per second and
the enqueue-to-start p50 and p99; at the end, the pinned database's
throughput against the clean one's over the pin, and how soon after the
pin its p99 came back within 1.5x of the clean one's.
"""

import argparse
import json
import statistics
import time
from typing import Any

import psycopg

import jobtable
from bench._processes import Child
from bench._stats import Table
from bench.pinned_xmin import _second_database
from bench.restart import cluster
from bench.soak import Enqueuer

WINDOW = 10.0
"""Seconds each printed row covers."""


def _take(child: Child) -> tuple[int, list[float]]:
    child.send("stats")
    out = json.loads(child.expect(""))
    return int(out["done"]), [float(x) for x in out["lat"]]


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else 0.0


def _phase(
    children: tuple[Child, Child], name: str, seconds: float, table: Table
) -> list[tuple[float, float, float, float]]:
    """Runs for seconds, a row of table per WINDOW.

    Returns each window's (clean jobs/s, pinned jobs/s, clean p99, pinned p99).
    """
    rows = []
    offset = 0.0
    end = time.monotonic() + seconds
    for child in children:
        _take(child)  # what came before the phase
    while time.monotonic() < end:
        time.sleep(WINDOW)
        (clean, clean_lat), (pinned, pinned_lat) = (_take(child) for child in children)
        rate = (clean / WINDOW, pinned / WINDOW)
        p99 = (_p(clean_lat, 0.99), _p(pinned_lat, 0.99))
        rows.append((*rate, *p99))
        table.add(
            f"{name} {offset:.0f}-{offset + WINDOW:.0f} s",
            f"{rate[0]:.0f}",
            f"{rate[1]:.0f}",
            f"{rate[1] / rate[0]:.2f}" if rate[0] else "-",
            f"{_p(clean_lat, 0.5):.0f}",
            f"{_p(pinned_lat, 0.5):.0f}",
            f"{p99[0]:.0f}",
            f"{p99[1]:.0f}",
        )
        print(table.rows[-1], flush=True)
        offset += WINDOW
    return rows


def _pin(url: str) -> psycopg.Connection[Any]:
    """A REPEATABLE READ transaction on url that read the jobs table, left open."""
    conn = psycopg.connect(url)
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    conn.execute("SELECT count(*) FROM jobs").fetchone()
    return conn


def _summary(during: list[tuple[float, float, float, float]], after: list[Any]) -> list[str]:
    clean = sum(row[0] for row in during)
    pinned = sum(row[1] for row in during)
    back = next(
        (i * WINDOW for i, row in enumerate(after) if row[3] <= 1.5 * max(row[2], 1.0)), None
    )
    return [
        f"over the pin the pinned database finished {pinned / clean:.0%} of the clean one's jobs"
        f" (last window {during[-1][1] / max(during[-1][0], 1):.0%}); median p99"
        f" {statistics.median(r[2] for r in during):.0f} ms clean,"
        f" {statistics.median(r[3] for r in during):.0f} ms pinned",
        "after the pin, the pinned p99 came within 1.5x of the clean one's "
        + ("never in the run" if back is None else f"in the window starting {back:.0f} s after"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.pinned_load")
    parser.add_argument("--rate", type=float, default=300.0, help="jobs offered a second, each")
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--warm", type=float, default=20.0)
    parser.add_argument("--pinned", type=float, default=120.0)
    parser.add_argument("--after", type=float, default=60.0)
    parser.add_argument("--from-head", action="store_true", help="claims start at the head")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    claims = "from the head" if args.from_head else "from places"
    table = Table(
        f"Runners under a pinned xmin beside runners without ({args.rate:.0f} jobs/s offered "
        f"to each, {args.workers} workers, claims {claims})",
        ["window", "clean jobs/s", "pinned jobs/s", "pinned / clean", "clean p50 ms",
         "pinned p50 ms", "clean p99 ms", "pinned p99 ms"],
    )  # fmt: skip
    with cluster() as (url, _):
        urls = (url, _second_database(url))
        stores = [jobtable.Store.open(u) for u in urls]
        children = tuple(
            Child(
                {"target": u, "name": f"pinned-load-{i}", "workers": args.workers,
                 "from_head": args.from_head},
                module="bench._soak_child",
            )
            for i, u in enumerate(urls)
        )  # fmt: skip
        enqueuers = [Enqueuer(store, args.rate) for store in stores]
        try:
            for child in children:
                child.expect("ready")
                child.send("go")
                child.expect("started")
            for enqueuer in enqueuers:
                enqueuer.start()
            _phase((children[0], children[1]), "warm", args.warm, table)
            pin = _pin(urls[1])
            during = _phase((children[0], children[1]), "pinned", args.pinned, table)
            pin.rollback()
            pin.close()
            after = _phase((children[0], children[1]), "after", args.after, table)
        finally:
            for enqueuer in enqueuers:
                enqueuer.join()
            for child in children:
                child.finish()
            for store in stores:
                store.close()
    table.notes.extend(_summary(during, after))
    print(table.render(args.markdown))


if __name__ == "__main__":
    main()
