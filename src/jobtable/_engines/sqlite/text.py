"""SQLite connections that read any stored text and never leave a statement open.

SQLite stores whatever bytes it is given as TEXT (``CAST(X'FF' AS TEXT)``).
The engine's connections decode such text without raising, so one bad row
cannot stop a claim, and finish every statement an operation started,
whatever the outcome, so an error cannot leave the writer locked.
"""

import itertools
import operator
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

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


_Order = Callable[[Sequence[Any]], Sequence[Any]]
"""Picks a sequence's parameters in the order of the plain ``?`` placeholders."""

_QUOTES = {"'": "'", '"': '"', "`": "`", "[": "]"}


def _plain(sql: str) -> tuple[str, int, _Order | None] | None:
    """sql with each ``?N`` made a plain ``?``: the text, the highest N, the parameters' order.

    The order is None when the placeholders already come as ?1, ?2, ...
    None when sql has any other kind of placeholder (``?``, ``:name``,
    ``@name``, ``$name``, or what might be one): such text is bound by_number.
    Quoted text and comments are copied as they are.
    """
    out: list[str] = []
    numbers: list[int] = []
    i, end, copied = 0, len(sql), 0
    while i < end:
        char = sql[i]
        if char in _QUOTES:
            close = sql.find(_QUOTES[char], i + 1)
            if close < 0:
                return None
            i = close + 1
        elif sql.startswith("--", i):
            close = sql.find("\n", i)
            i = end if close < 0 else close + 1
        elif sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            if close < 0:
                return None
            i = close + 2
        elif char == "?":
            digits = i + 1
            while digits < end and sql[digits] in "0123456789":
                digits += 1
            if digits == i + 1:
                return None
            out.append(sql[copied : i + 1])
            numbers.append(int(sql[i + 1 : digits]))
            i = copied = digits
        elif char in ":@$":
            return None
        else:
            i += 1
    if not numbers:
        return None
    out.append(sql[copied:])
    top = max(numbers)
    if numbers == list(range(1, top + 1)):
        return "".join(out), top, None
    indexes = [number - 1 for number in numbers]
    if len(indexes) == 1:
        [only] = indexes
        return "".join(out), top, lambda parameters: (parameters[only],)
    return "".join(out), top, cast(_Order, operator.itemgetter(*indexes))


_PLAIN: dict[str, tuple[str, int, _Order | None] | None] = {}
_PLAIN_MOST = 1024
"""The most statements whose plain form is remembered (every statement of the engine's)."""


def positional(sql: str, parameters: Any) -> tuple[str, Any]:
    """sql and parameters as sqlite3 binds them fastest: plain ``?`` from a sequence.

    sqlc numbers its placeholders ``?1``, ``?2``, ... (a number may repeat),
    which no version of sqlite3 lets a sequence bind without a warning or a
    refusal. Binding them by name (``by_number``) builds a mapping on every
    statement; instead each numbered text is rewritten once to plain ``?``
    and the sequence reordered to match. What cannot be rewritten, and a
    sequence of the wrong length (so sqlite3 names the missing value), is
    bound by_number; a mapping, and no parameters, pass unchanged.
    """
    if not (parameters and isinstance(parameters, tuple | list)):
        return sql, parameters
    try:
        plain = _PLAIN[sql]
    except KeyError:
        plain = _plain(sql)
        if len(_PLAIN) < _PLAIN_MOST:
            _PLAIN[sql] = plain
    if plain is None or plain[1] != len(parameters):
        return sql, by_number(parameters)
    text, _, order = plain
    return text, parameters if order is None else order(parameters)


_execute = sqlite3.Connection.execute


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
        """Runs sql on a new cursor; ``finish_statements`` closes it if it may have rows left.

        A statement without result columns has run to its end when execute
        returns, and one that raised has stopped: neither stays in progress.
        """
        if parameters:
            sql, parameters = positional(sql, parameters)
        cursor = _execute(self, sql, parameters)
        if cursor.description is not None:
            self._cursors.append(cursor)
        return cursor

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        """Runs sql once per row of parameters (see ``execute``)."""
        rows = iter(parameters)
        first = next(rows, None)
        if first is None:
            return super().executemany(sql, ())
        text, _ = positional(sql, first)
        if text is sql:
            return super().executemany(sql, map(by_number, itertools.chain([first], rows)))
        return super().executemany(
            text, (positional(sql, row)[1] for row in itertools.chain([first], rows))
        )

    def run(self, op: Callable[[Q], T], queries: Q) -> T:
        """Returns op(queries), then finishes every statement op started, whatever the outcome."""
        try:
            return op(queries)
        finally:
            self.finish_statements()

    def finish_statements(self) -> None:
        """Closes every cursor execute made since the last call, ending its statement."""
        if not self._cursors:
            return
        cursors, self._cursors = self._cursors, []
        for cursor in cursors:
            cursor.close()

    def close(self) -> None:
        """Ends every statement, then closes the connection (so its files are released)."""
        self.finish_statements()
        super().close()
