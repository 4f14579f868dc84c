"""SQLite connections that read any stored text and never leave a statement open.

SQLite stores whatever bytes it is given as TEXT (``CAST(X'FF' AS TEXT)``).
The engine's connections decode such text without raising, so one bad row
cannot stop a claim, and finish every statement an operation started,
whatever the outcome, so an error cannot leave the writer locked.
"""

import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

Q = TypeVar("Q")
T = TypeVar("T")


def decode_text(data: bytes) -> str:
    """Decodes a TEXT value; bytes that are not UTF-8 become lone surrogates.

    sqlite3's own decoding raises in the middle of a fetch, which fails the
    whole statement: one such row would stop every claim. Decoded this way
    the row reads, and its reader can tell it apart (the text does not encode
    to UTF-8) and refuse that row alone.
    """
    return data.decode("utf-8", "surrogateescape")


def by_number(parameters: Any) -> Any:
    """Returns a sequence of parameters as the mapping of sqlc's numbered ``?N`` placeholders.

    Python 3.12 deprecates binding ``?1`` from a sequence (a DeprecationWarning
    on every statement) and 3.14 refuses it; bound by name ("1", "2", ...)
    it works on every version. A mapping, and no parameters, pass unchanged.
    """
    if isinstance(parameters, list | tuple) and parameters:
        return {str(number): value for number, value in enumerate(parameters, 1)}
    return parameters


class Connection(sqlite3.Connection):
    """A connection that can finish every statement it started.

    A statement whose rows were not all fetched stays in progress until its
    cursor is freed; an exception raised while fetching keeps that cursor
    alive in its traceback, and an UPDATE ... RETURNING left in progress
    makes every later savepoint fail with "SQL statements in progress" and
    holds the write lock against other processes. The engine runs every
    operation through ``run``, which finishes them whatever the outcome.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cursors: list[sqlite3.Cursor] = []
        self.text_factory = decode_text

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        """Runs sql on a new cursor that ``finish_statements`` closes."""
        cursor = self.cursor()
        self._cursors.append(cursor)
        return cursor.execute(sql, by_number(parameters))

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        """Runs sql once per row of parameters on a cursor that ``finish_statements`` closes."""
        cursor = self.cursor()
        self._cursors.append(cursor)
        return cursor.executemany(sql, map(by_number, parameters))

    def run(self, op: Callable[[Q], T], queries: Q) -> T:
        """Returns op(queries), then finishes every statement op started, whatever the outcome."""
        try:
            return op(queries)
        finally:
            self.finish_statements()

    def finish_statements(self) -> None:
        """Closes every cursor execute made since the last call, ending its statement."""
        cursors, self._cursors = self._cursors, []
        for cursor in cursors:
            cursor.close()

    def close(self) -> None:
        """Ends every statement, then closes the connection (so its files are released)."""
        self.finish_statements()
        super().close()
