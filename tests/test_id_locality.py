"""Jobs enqueued together share the pages of the index on ids (SQLite).

Ids begin with their creation time, so a commit of many enqueues adds its
entries to a few neighbouring pages of ``jobs``' unique index on ``id``,
instead of about one page a job as ids of random bits did. A page count,
read off the WAL's size, not a timing: on a file of 20,000 jobs, random ids
made a commit of 100 enqueues write about 95 frames, ids as made now about
22 (``python -m bench._id_locality``).
"""

import pathlib
import sqlite3

import jobtable

FRAME = 4096 + 24
"""Bytes of one WAL frame: a page and its header."""


def test_a_commit_of_100_enqueues_writes_a_few_pages_of_the_id_index(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "jobs.db"
    kind = jobtable.Kind("work", int, int)
    with jobtable.Store.open(path) as store:
        for _ in range(20):
            kind.enqueue_many(store, range(1000))
        check = sqlite3.connect(path, isolation_level=None)
        try:
            check.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            kind.enqueue_many(store, range(100))
            frames = pathlib.Path(f"{path}-wal").stat().st_size / FRAME
        finally:
            check.close()
    assert frames < 50, frames
