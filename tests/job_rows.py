"""A job's row as stored, read with the engine's own driver: the columns no record shows."""

import contextlib
import sqlite3
from typing import NamedTuple


class StoredKeys(NamedTuple):
    """A job's flow-control columns as stored."""

    partition_key: str | None
    sequence_key: str | None
    sequence_blocks: bool


_SELECT = "SELECT partition_key, sequence_key, sequence_blocks FROM jobs WHERE id = "


def stored_keys(store_target: str, engine: str, job_id: str) -> StoredKeys:
    """The partition and sequence keys job_id is stored with; raises KeyError for no such job."""
    if engine == "sqlite":
        with contextlib.closing(sqlite3.connect(store_target)) as conn:
            row = conn.execute(_SELECT + "?", (job_id,)).fetchone()
    else:
        import psycopg

        with psycopg.connect(store_target) as pg:
            row = pg.execute(_SELECT + "%s", (job_id,)).fetchone()
    if row is None:
        raise KeyError(job_id)
    return StoredKeys(row[0], row[1], bool(row[2]))
