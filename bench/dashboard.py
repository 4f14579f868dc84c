"""How long the dashboard's pages take to load with a million jobs in the table.

For each engine: a fresh database with 100 jobs of a rare kind, the pages
timed through a real uvicorn (whole response, over loopback HTTP); then a
million finished jobs and 20k queued ones are added (bench._db's fill, newer
than the rare jobs, so a filter on the rare kind must reach past them) and
the same pages timed again. Each figure is the median of --repeat loads after
one warm-up; the ratio is the 1M figure over the small-table one, both from
this run.

    .venv/bin/python -m bench.dashboard                      # both engines, 1M rows
    .venv/bin/python -m bench.dashboard --finished-ago 24       # the fill finished a day ago
    .venv/bin/python -m bench.dashboard --engines sqlite --rows 200000
"""

import argparse
import asyncio
import datetime
import http.client
import os
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

import jobtable
from bench import _db, _postgres_db, _sqlite_db

RARE = jobtable.Kind("rare", dict, dict)


@contextmanager
def served(store: jobtable.Store) -> Iterator[int]:
    """The dashboard of store on a free loopback port, in a thread; yields the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(jobtable.dashboard(store), log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def load(port: int, path: str) -> float:
    """Seconds to GET path and read the whole page; fails on a status other than 200 or 303."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        began = time.perf_counter()
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        spent = time.perf_counter() - began
    finally:
        conn.close()
    if response.status not in (200, 303):
        raise SystemExit(f"GET {path}: status {response.status}")
    return spent


def pages(store: jobtable.Store, rare_id: str) -> dict[str, str]:
    """The pages timed, by label: the overview and the list with each kind of filter."""
    middle = store.list_jobs(limit=1)[0].seq // 2
    return {
        "overview (counts, throughput, runners)": "/",
        "overview live refresh": "/live/overview",
        "job list, first page": "/jobs",
        "job list, a page halfway down": f"/jobs?before={middle}",
        "job list, status=queued": "/jobs?status=queued",
        "job list, status=failed (none)": "/jobs?status=failed",
        "job list, kind=rare (oldest 100)": "/jobs?kind=rare",
        "job list, queue=default": "/jobs?queue=default",
        "job page": f"/jobs/{rare_id}",
        "kinds page (last hour's figures)": "/kinds",
        "search, payload text (newest 10,000)": "/search?q=no-such-text",
        "search, a job id (redirect)": f"/search?q={rare_id}",
    }


def measure(store: jobtable.Store, rare_id: str, repeat: int) -> dict[str, float]:
    """The median load time of each page, warmed up once."""
    found = {}
    with served(store) as port:
        for label, path in pages(store, rare_id).items():
            load(port, path)
            found[label] = statistics.median(load(port, path) for _ in range(repeat))
    return found


def backdate(db: _db.Database, hours: float) -> None:
    """Moves the filled jobs' times hours back, out of the throughput chart's hour."""
    if isinstance(db, _sqlite_db.SQLiteDatabase):
        stamp = (datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=hours)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ"
        )
        db._conn.execute(
            "UPDATE jobs SET run_at = ?, created_at = ?, started_at = ?, finished_at = ?,"
            " updated_at = ? WHERE kind = ?",
            (*[stamp] * 5, _db.KIND),
        )
    elif isinstance(db, _postgres_db.PostgresDatabase):
        db._conn.execute(
            "UPDATE jobs SET run_at = run_at - %s * interval '1 hour',"
            " created_at = created_at - %s * interval '1 hour',"
            " started_at = started_at - %s * interval '1 hour',"
            " finished_at = finished_at - %s * interval '1 hour',"
            " updated_at = updated_at - %s * interval '1 hour' WHERE kind = %s",
            (*[hours] * 5, _db.KIND),
        )
        db._conn.execute("VACUUM ANALYZE jobs")


def run(engine: str, rows: int, repeat: int, finished_ago: float) -> None:
    """Prints the table of one engine."""
    if engine == "sqlite":
        db: _db.Database = _sqlite_db.SQLiteDatabase.create()
    else:
        url = os.environ.get("JOBTABLE_TEST_POSTGRES_URL") or _db.PG_URL
        db = _postgres_db.PostgresDatabase.create(url)
    try:
        rare_ids = [RARE.enqueue(db.store, {"n": n}) for n in range(100)]
        small = measure(db.store, rare_ids[0], repeat)
        began = time.perf_counter()
        db.fill_finished(rows)
        if finished_ago:
            backdate(db, finished_ago)
        print(f"{engine}: filled {rows} rows in {time.perf_counter() - began:.0f} s", flush=True)
        large = measure(db.store, rare_ids[0], repeat)
        version = db.version()
    finally:
        db.close()
    when = f"finished {finished_ago:g} h ago" if finished_ago else "finished within the hour"
    print(f"\n{engine} {version}: page load, median of {repeat} (ms), fill {when}")
    print(f"| page | 100 rows | {rows:,} rows | ratio |")
    print("|---|---:|---:|---:|")
    for label, seconds in large.items():
        ratio = seconds / small[label] if small[label] else float("nan")
        print(f"| {label} | {small[label] * 1000:.1f} | {seconds * 1000:.1f} | {ratio:.1f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--finished-ago",
        type=float,
        default=0.0,
        help="hours before now the filled jobs finished (0: now, all in the throughput chart)",
    )
    args = parser.parse_args()
    for engine in args.engines:
        run(engine, args.rows, args.repeat, args.finished_ago)


if __name__ == "__main__":
    main()
