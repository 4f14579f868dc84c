"""The SQLite engine's one translation of sqlite3's errors into StoreError, classified."""

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from jobtable._errors import StoreError

_TRANSIENT_CODES = frozenset(
    getattr(sqlite3, name)
    for name in (
        "SQLITE_BUSY",
        "SQLITE_LOCKED",
        "SQLITE_NOMEM",
        "SQLITE_IOERR",
        "SQLITE_FULL",
        "SQLITE_CANTOPEN",
        "SQLITE_PROTOCOL",
        "SQLITE_INTERRUPT",
    )
)
"""SQLite's primary result codes that a later retry of the same call may not get."""


def store_error(path: Path, err: sqlite3.Error) -> StoreError:
    """The StoreError naming path that err becomes, transient or not.

    This is the one place a driver error is translated, and classified: a
    busy or locked database, an I/O error, a full disk or a file that cannot
    be opened now is transient (the same call may succeed later); any other
    error (a constraint, bad data, a bad statement) is not.
    """
    code = getattr(err, "sqlite_errorcode", None)
    transient = code is not None and code & 0xFF in _TRANSIENT_CODES
    hint = ""
    if code is not None and code & 0xFF == sqlite3.SQLITE_BUSY:
        # Most often the application's own open transaction on the same file,
        # which the store's writer then waits on until busy_timeout.
        hint = (
            " (another connection held the write lock past busy_timeout; if this process "
            "holds an open transaction on the file, pass conn= to enqueue in it)"
        )
    return StoreError(f"sqlite store {path}: {err}{hint}", transient=transient)


@contextlib.contextmanager
def driver_errors(path: Path) -> Iterator[None]:
    """Turns a sqlite3 error into a StoreError naming path (``store_error``); lets others by."""
    try:
        yield
    except sqlite3.Error as err:
        raise store_error(path, err) from err
