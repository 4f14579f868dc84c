"""What the soak reads of a database's storage each minute, by engine.

``probe`` returns one flat dict of figures: on PostgreSQL the jobs table's
total, heap and index sizes (``pg_total_relation_size``, ``pg_relation_size``,
``pg_indexes_size``) and its ``pg_stat_user_tables`` counters (live and dead
tuples, autovacuum and vacuum runs, updates and HOT updates); on SQLite the
file's page count and freelist count, its size, and the ``-wal`` file's
size, the frames the WAL holds (from the ``-shm`` file's header) and its
checkpoint sequence number (from the ``-wal`` header: it goes up each time a
checkpoint lets the WAL restart from its beginning). Both give the backlog:
the jobs queued or running.
"""

import os
import sqlite3
import struct
from pathlib import Path
from typing import Any

from bench import _db

MIB = 1024 * 1024

_PG_SIZES = """
SELECT pg_total_relation_size(c.oid), pg_relation_size(c.oid), pg_indexes_size(c.oid),
       s.n_live_tup, s.n_dead_tup, s.autovacuum_count, s.vacuum_count,
       s.n_tup_upd, s.n_tup_hot_upd, c.reloptions
FROM pg_class AS c JOIN pg_stat_user_tables AS s ON s.relid = c.oid
WHERE c.oid = 'jobs'::regclass
"""

_BACKLOG = "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"


def wal_bytes(path: Path) -> int:
    """The size of the database's -wal file, 0 when it is missing."""
    try:
        return os.stat(f"{path}-wal").st_size
    except FileNotFoundError:
        return 0


class ShmReader:
    """Reads the frames the WAL holds from the -shm file's header, through one descriptor.

    The descriptor stays open until close: closing any descriptor of a file
    drops every POSIX lock this process holds on it, and SQLite's
    connections in this process lock the -shm file. So close comes only
    after every connection of this process to the database is closed.
    """

    def __init__(self, path: Path) -> None:
        self._path = f"{path}-shm"
        self._fd: int | None = None

    def frames(self) -> int:
        """The WAL's frames now (mxFrame of the header), 0 while there is no -shm file."""
        if self._fd is None:
            try:
                self._fd = os.open(self._path, os.O_RDONLY)
            except FileNotFoundError:
                return 0
        header = os.pread(self._fd, 20, 0)
        if len(header) < 20:
            return 0
        return int(struct.unpack("=I", header[16:20])[0])

    def close(self) -> None:
        """Closes the descriptor; see the class's docstring for when."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def wal_resets(path: Path) -> int | None:
    """The -wal header's checkpoint sequence number, None while the file has no header."""
    try:
        with open(f"{path}-wal", "rb") as wal:
            header = wal.read(16)
    except FileNotFoundError:
        return None
    if len(header) < 16:
        return None
    return int(struct.unpack(">I", header[12:16])[0])


class SQLiteProbe:
    """Reads a SQLite database's sizes through a read-only connection of its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
        self._conn.execute("PRAGMA busy_timeout = 5000")

    def probe(self) -> dict[str, Any]:
        """The file's figures now."""
        execute = self._conn.execute
        pages = execute("PRAGMA page_count").fetchone()[0]
        free = execute("PRAGMA freelist_count").fetchone()[0]
        page_size = execute("PRAGMA page_size").fetchone()[0]
        backlog = execute(_BACKLOG).fetchone()[0]
        return {
            "pages": pages,
            "freelist": free,
            "db_mib": pages * page_size / MIB,
            "wal_mib": wal_bytes(self.path) / MIB,
            "wal_seq": wal_resets(self.path),
            "backlog": backlog,
        }

    def close(self) -> None:
        """Closes the connection."""
        self._conn.close()


class PostgresProbe:
    """Reads a PostgreSQL schema's jobs table sizes and counters on a connection of its own."""

    def __init__(self, target: str) -> None:
        import psycopg

        self._conn = psycopg.connect(target, autocommit=True)

    def probe(self) -> dict[str, Any]:
        """The table's figures now."""
        row = self._conn.execute(_PG_SIZES).fetchone()
        assert row is not None
        backlog = self._conn.execute(_BACKLOG).fetchone()
        assert backlog is not None
        total, heap, index, live, dead, autovac, vac, upd, hot, options = row
        return {
            "total_mib": total / MIB,
            "heap_mib": heap / MIB,
            "index_mib": index / MIB,
            "live": live,
            "dead": dead,
            "autovacuum": autovac,
            "vacuum": vac,
            "updates": upd,
            "hot": hot,
            "reloptions": options,
            "backlog": backlog[0],
        }

    def settings(self) -> dict[str, str]:
        """The server's autovacuum settings and version, by name."""
        rows = self._conn.execute(
            "SELECT name, setting FROM pg_settings"
            " WHERE name LIKE 'autovacuum%' OR name = 'server_version'"
        ).fetchall()
        return {str(name): str(value) for name, value in rows}

    def close(self) -> None:
        """Closes the connection."""
        self._conn.close()


def open_probe(db: _db.Database) -> SQLiteProbe | PostgresProbe:
    """The probe of db's engine."""
    if db.engine == "sqlite":
        return SQLiteProbe(Path(db.target))
    return PostgresProbe(db.target)
