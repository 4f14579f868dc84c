"""A claim and a finish write no entry in the listing's indexes (SQLite, schema version 10).

The listing's indexes (jobs_by_*) hold no status a job's ordinary life moves
through (queued, running, succeeded): kind and queue never change after the
insert, and the rare statuses' indexes hold failed, cancelled and pending
jobs only. So a runner's cycle (claim, then finish, 1 job a commit) dirties
the same pages with them as without them: the WAL of the same cycle on the
same rows has the same number of frames. A page count, not a timing.
"""

import pathlib
import re
import sqlite3

from jobtable._engines.sqlite.file import SQLiteSchema

ROOT = pathlib.Path(__file__).resolve().parent.parent
T = "2025-01-02T03:04:05.000001Z"
LISTING = re.compile(r"^jobs_by_\w+$")


def wal_frames(path: pathlib.Path, statements: list[str], jobs: int) -> int:
    """WAL frames written by the cycle of jobs jobs, 1 a commit, on a new file of statements."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        for statement in statements:
            conn.execute(statement)
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO jobs (id, kind, queue, payload, run_at, created_at, updated_at)"
            f" VALUES (?, ?, ?, '{{}}', '{T}', '{T}', '{T}')",
            [
                (f"j{n}", ("report", "ping")[n % 2], ("mail", "default")[n % 3 % 2])
                for n in range(jobs)
            ],
        )
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        previous = None
        for seq in range(1, jobs + 1):
            conn.execute("BEGIN IMMEDIATE")
            if previous is not None:
                conn.execute(
                    "UPDATE jobs SET status = 'succeeded', result = '1', finished_at = ?,"
                    " updated_at = ? WHERE seq = ?",
                    (T, T, previous),
                )
            conn.execute(
                "UPDATE jobs SET status = 'running', runner = 'r', attempt = 1, started_at = ?,"
                " updated_at = ? WHERE seq = ?",
                (T, T, seq),
            )
            conn.execute("COMMIT")
            previous = seq
        return pathlib.Path(f"{path}-wal").stat().st_size
    finally:
        conn.close()


def test_a_claim_and_a_finish_write_the_same_pages_with_the_listing_indexes_as_without(
    tmp_path: pathlib.Path,
) -> None:
    schema = SQLiteSchema((ROOT / "schema.sql").read_text())
    listing = [st for st in schema.statements if any(LISTING.match(n) for n in schema.creates(st))]
    assert len(listing) == 5
    without = [st for st in schema.statements if st not in listing]
    with_them = wal_frames(tmp_path / "with.db", schema.statements, 300)
    assert with_them == wal_frames(tmp_path / "without.db", without, 300)


def test_the_listing_indexes_keyed_by_status_cost_the_cycle_pages(tmp_path: pathlib.Path) -> None:
    """The check above can fail: version 8's indexes keyed by status add pages to each commit."""
    schema = SQLiteSchema((ROOT / "schema.sql").read_text())
    keyed = [
        f"CREATE INDEX jobs_by_status{suffix} ON jobs (status, {columns}seq)"
        " WHERE status <> 'running'"
        for suffix, columns in (("", ""), ("_kind", "kind, "), ("_queue", "queue, "))
    ]
    plain = wal_frames(tmp_path / "plain.db", schema.statements, 300)
    assert wal_frames(tmp_path / "keyed.db", [*schema.statements, *keyed], 300) > plain * 1.3
