"""Keeps a SQLite database's ``-wal`` file under a size, however busy its readers are.

SQLite's automatic checkpoint (every 1000 pages, PASSIVE) copies the WAL's
pages into the database, but the WAL starts over from its beginning only
when a write finds every page copied and no reader using the WAL. Under
readers that never all stop at once (dashboards, listings, several worker
processes), that moment never comes, and the WAL grows without bound, each
read slower as it searches a longer WAL.

``WalLimit`` looks at the ``-wal`` file's size after each commit of the
process's writer, and once it passes the limit runs ``PRAGMA
wal_checkpoint(TRUNCATE)`` on the writer connection: that checkpoint holds
the write lock, so no page is added while it waits, copies every page, and
waits (for up to the connection's busy timeout) for the readers still using
the WAL to finish; readers that begin meanwhile read the database file alone,
since every page is copied, so the wait ends with the longest read under way.
Then it empties the file. A checkpoint that times out is tried again only
once the file has grown by another limit, so a long read costs one wait, not
one per commit.

The file's size is the most the WAL has held since it was last emptied (a
restart writes over it from the beginning), so the check errs towards
checkpointing early, never late.
"""

import logging
import os
import sqlite3
from pathlib import Path

from jobtable._engines.sqlite.text import Connection

WAL_LIMIT = 64 * 1024 * 1024
"""The ``-wal`` file's size, in bytes, past which the writer checkpoints and empties it."""

_logger = logging.getLogger("jobtable.sqlite")


def check_wal_limit(limit: object) -> None:
    """Raises ValueError unless limit is None or a positive int of bytes."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"wal_limit is {limit!r}, want a positive int of bytes or None")


class WalLimit:
    """The check a writer connection makes after each commit; see the module's docstring."""

    def __init__(self, path: Path, limit: int) -> None:
        """Watches path's ``-wal`` file; limit is in bytes, at least 1."""
        check_wal_limit(limit)
        self._wal = f"{path}-wal"
        self.limit = limit
        self._next = limit
        self.truncations = 0
        """How many checkpoints emptied the file: a signal for tests."""

    def after_commit(self, conn: Connection) -> None:
        """Checkpoints and empties the WAL through conn, outside any transaction, if it is due.

        A checkpoint that fails is logged, never raised: the commit it
        follows has landed.
        """
        try:
            size = os.stat(self._wal).st_size
        except FileNotFoundError:
            return
        if size <= self._next:
            return
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.Error as err:
            busy = 1
            _logger.warning("checkpoint of %s failed: %s", self._wal, err)
        if busy:
            self._next = size + self.limit
        else:
            self._next = self.limit
            self.truncations += 1
