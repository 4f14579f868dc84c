"""Takes SQLite query text from the query file where sqlc 1.31 sliced it wrong.

sqlc 1.31's SQLite parser (ANTLR) reports where each statement starts and
ends as counts of characters, and sqlc cuts the statement out of the file's
bytes at those counts. Every multi-byte UTF-8 character before a query (an
em dash or CJK text in a comment, a non-ASCII string literal) shifts its cut
by the extra bytes: the query loses its tail and gains text of the one
before, or sqlc stops on invalid UTF-8 when a cut splits a character.
PostgreSQL's parser counts bytes, so only SQLite needs this.

Here the plugin reads the query file itself, finds each statement as the
ANTLR parser delimits it (from two characters after the end of the previous
statement to the last character of its own last token), and repeats sqlc's
cut in characters. sqlc's text is kept wherever the cut was right. Where it
was wrong, the text comes from the file when sqlc changed nothing in the
query; a query sqlc rewrote (named parameters, ``*``, ``sqlc.embed``) at
offsets it had wrong cannot be repaired and is refused.
"""

import dataclasses
import pathlib
import re

from ._request import Query, Request, RequestError

# One token of SQLite as its lexer splits the text, or one character of
# anything else. A quote left open runs to the end of the text.
_TOKEN = re.compile(
    r"""
    (?P<hidden>\s+ | --[^\n]* | /\*(?s:.*?)(?:\*/|\Z))
    | (?P<end>;)
    | '(?:[^']|'')*'? | "(?:[^"]|"")*"? | `(?:[^`]|``)*`? | \[[^\]]*\]?
    | (?s:.)
    """,
    re.VERBOSE,
)
_NAME = re.compile(r"^-- name: (\S+)", re.MULTILINE)


@dataclasses.dataclass(frozen=True, slots=True)
class Window:
    """Where sqlc's SQLite parser says a statement lies: [start, stop) in characters."""

    start: int
    stop: int


def statement_windows(text: str) -> list[Window]:
    """Returns the extent of each statement of text as sqlc 1.31's SQLite parser gives it.

    A statement runs from two characters past the last token of the one
    before (past its semicolon) to the end of its own last token, so it
    holds the comments above it but not its semicolon.
    """
    windows: list[Window] = []
    start, last = 0, -1
    for match in _TOKEN.finditer(text):
        if match.group("hidden"):
            continue
        if match.group("end"):
            if last >= start:
                windows.append(Window(start, last + 1))
                start = last + 2
            continue
        last = match.end() - 1
    if last >= start:
        windows.append(Window(start, last + 1))
    return windows


def strip_comments(sql: str) -> tuple[str, tuple[str, ...]]:
    """Returns sql without its comment lines, and those comments, as sqlc's StripComments does.

    Lines starting ``-- name:`` are dropped; other lines starting ``--`` or
    wholly a ``/* */`` comment become comments; the rest is the SQL.
    """
    lines: list[str] = []
    comments: list[str] = []
    for line in sql.strip().split("\n"):
        line = line.removesuffix("\r")
        if line.startswith(("-- name:", "# name:")) or (
            line.startswith("/* name:") and line.endswith("*/")
        ):
            continue
        if line.startswith("--"):
            comments.append(line.removeprefix("--"))
        elif line.startswith("/*") and line.endswith("*/") and not line.startswith("/*+"):
            comments.append(line.removeprefix("/*").removesuffix("*/"))
        else:
            lines.append(line)
    return "\n".join(lines), tuple(comments)


def _query_file(request: Request, filename: str) -> bytes | None:
    """Returns the bytes of the query file sqlc named filename, None when not found."""
    for name in request.query_paths:
        path = pathlib.Path(name)
        candidate = path / filename if path.is_dir() else path
        if candidate.name == filename and candidate.is_file():
            try:
                return candidate.read_bytes()
            except OSError:
                return None
    return None


def _repaired(query: Query, data: bytes, text: str, windows: dict[str, Window]) -> Query:
    """Returns query with the text sqlc meant to send, or raises RequestError."""
    window = windows.get(query.name)
    if window is None:
        return query
    meant = text[window.start : window.stop]
    sent = data[window.start : window.stop].decode("utf-8", errors="replace")
    if sent == meant:
        return query
    if strip_comments(sent)[0] != query.text:
        raise RequestError(
            f"query {query.name} ({query.filename}): sqlc cut its text at the wrong place "
            "(sqlc 1.31's SQLite parser counts characters where it cuts bytes, and a "
            "non-ASCII character comes before it) and also rewrote it (named parameters, "
            "* or sqlc.embed), which the plugin cannot undo: keep non-ASCII text out of "
            "the query file before this query, or write ? and the column names"
        )
    sql, comments = strip_comments(meant)
    return dataclasses.replace(query, text=sql, comments=comments)


def repair_sqlite_text(request: Request) -> Request:
    """Returns request with each SQLite query's text and comments as its file holds them.

    A request of another engine, or whose query files are ASCII, is returned
    as it is. Raises RequestError for a query whose text cannot be repaired.
    """
    if request.engine != "sqlite":
        return request
    queries: list[Query] = []
    files: dict[str, tuple[bytes, str, dict[str, Window]] | None] = {}
    for query in request.queries:
        if query.filename not in files:
            data = _query_file(request, query.filename)
            if data is None or data.isascii():
                files[query.filename] = None
            else:
                text = data.decode("utf-8", errors="replace")
                named = {}
                for window in statement_windows(text):
                    match = _NAME.search(text, window.start, window.stop)
                    if match is not None:
                        named[match.group(1)] = window
                files[query.filename] = (data, text, named)
        found = files[query.filename]
        queries.append(query if found is None else _repaired(query, *found))
    return dataclasses.replace(request, queries=tuple(queries))
