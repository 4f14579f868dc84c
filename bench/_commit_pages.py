"""What a runner's commit writes, by schema: ``python -m bench._commit_pages [--rev REV]``.

A runner commits once per claim, with the outcomes of the jobs that freed
the slots: 1 job a commit with 1 worker, up to 4 with 4. Each index whose
entry a status change moves adds a page to that commit. For SQLite's schema
as it is, without the listing's indexes (``jobs_by_*``), and (--rev, e.g.
``--rev 0b180a6`` for schema version 8's indexes keyed by status) the schema
of another revision, this runs the cycle's UPDATEs on raw SQL (3,000 jobs,
``synchronous=NORMAL`` so that no fsync hides the pages, no automatic
checkpoint) and prints jobs/s and the WAL frames a commit, read off the WAL
file's size. Schemas are interleaved; medians of the rounds.
"""

import argparse
import re
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from bench._schema_cost import schema_at
from bench._stats import Table

ROOT = Path(__file__).resolve().parent.parent
JOBS = 3000
FRAME = 4096 + 24
"""Bytes of one WAL frame: a page and its header."""
NOW = "2026-12-04T06:00:00.000000Z"

_LISTING = re.compile(r"CREATE INDEX jobs_by_\w+ [^;]*;")


def variants(schema: str, rev: str | None) -> dict[str, str]:
    """The schemas measured, by label."""
    found = {"as it is": schema, "without the listing's indexes": _LISTING.sub("", schema)}
    if rev is not None:
        found[f"at {rev}"] = schema_at(rev, "sqlite")
    return found


def cycle(schema: str, per_commit: int) -> tuple[float, float]:
    """Jobs/s and WAL frames a commit of the claim-and-finish cycle on a new file of schema."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pages.db"
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "wal_autocheckpoint = 0"):
                conn.execute(f"PRAGMA {pragma}")
            conn.executescript(schema)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(jobs)")}
            wanted = {
                "kind": "noop",
                "payload": "{}",
                "created_at": NOW,
                "updated_at": NOW,
                "run_at": NOW,
            }
            values = {name: value for name, value in wanted.items() if name in columns}
            insert = (
                f"INSERT INTO jobs (id, {', '.join(values)}) "
                f"VALUES (?, {', '.join('?' * len(values))})"
            )
            conn.execute("BEGIN")
            for number in range(JOBS):
                conn.execute(insert, [f"job{number}", *values.values()])
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            seqs = [row[0] for row in conn.execute("SELECT seq FROM jobs ORDER BY seq")]
            # The columns a claim and a finish change, in any schema's shape.
            finish = (
                "UPDATE jobs SET status = 'succeeded', result = 'null', updated_at = ? "
                "WHERE seq = ?"
            )
            claim = "UPDATE jobs SET status = 'running', runner = 'r', updated_at = ? WHERE seq = ?"
            begin = time.perf_counter()
            previous: list[int] = []
            starts = range(0, JOBS, per_commit)
            for start in starts:
                batch = seqs[start : start + per_commit]
                conn.execute("BEGIN IMMEDIATE")
                for seq in previous:
                    conn.execute(finish, (NOW, seq))
                for seq in batch:
                    conn.execute(claim, (NOW, seq))
                conn.execute("COMMIT")
                previous = batch
            elapsed = time.perf_counter() - begin
            frames = Path(f"{path}-wal").stat().st_size / FRAME / len(starts)
        finally:
            conn.close()
    return JOBS / elapsed, frames


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._commit_pages")
    parser.add_argument("--rev", help="also the schema.sql of this git revision")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    schemas = variants((ROOT / "schema.sql").read_text(), args.rev)
    for per_commit in (1, 4):
        found: dict[str, list[tuple[float, float]]] = {label: [] for label in schemas}
        for _ in range(args.rounds):
            for label, schema in schemas.items():
                found[label].append(cycle(schema, per_commit))
        table = Table(
            f"SQLite schema, claim and finish of {per_commit} job(s) a commit, "
            f"synchronous=NORMAL, median of {args.rounds} interleaved round(s)",
            ["schema", "jobs/s", "WAL frames a commit"],
        )
        for label, runs in found.items():
            table.add(
                label,
                f"{statistics.median(rate for rate, _ in runs):,.0f}",
                f"{statistics.median(frames for _, frames in runs):.1f}",
            )
        print(table.render(markdown=True))


if __name__ == "__main__":
    main()
