"""The PostgreSQL engine's pooled connections: how they read text, and how dead ones go.

Each new connection reads every stored text (UTF-8, with bytes that are not
UTF-8 as lone surrogates; see ``TextLoader`` and ``client_encoding``), so one
bad row cannot stop a claim. After a server restart every pooled connection
is dead: the first one found dead drains the pool, so a write waits for one
fresh connection, not behind the dead ones.
"""

import contextlib
import logging
import select
from collections.abc import Iterator

import psycopg
from psycopg.abc import Buffer
from psycopg.rows import TupleRow
from psycopg_pool import ConnectionPool

_Connection = psycopg.Connection[TupleRow]

_logger = logging.getLogger("jobtable.postgres")


def dead(conn: _Connection) -> bool:
    """True for a connection leaving the pool that the server has closed.

    Costs a round trip only when it may be dead. An idle connection's socket
    has nothing to read unless the server sent something: the message it sends
    as it shuts down or ends the session, its end of file, or a notice. Only
    then is the connection probed with an empty query, which fails for a dead
    one. A network that dropped silently is found by the write itself.
    """
    if conn.closed or conn.broken:
        return True
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    if not readable:
        return False
    try:
        ConnectionPool.check_connection(conn)
    except psycopg.Error:
        return True
    return False


@contextlib.contextmanager
def connection(pool: ConnectionPool[_Connection], where: str) -> Iterator[_Connection]:
    """A pooled connection that was alive as it left the pool, returned to it after.

    After a server restart every pooled connection is dead. psycopg_pool's
    own check would discard them one at a time, waiting 1, 2, 4, 8 s
    between them, while the fresh connections queue behind the dead ones
    (past its 30 s timeout with six or more). So the first connection found
    dead drains the pool: every idle one is closed and replaced at once, and
    one in use is replaced when it comes back; the caller then gets a fresh
    one as soon as it is connected.
    """
    conn = pool.getconn()
    if dead(conn):
        _logger.info(
            "postgres store %s: found a dead connection, replacing every pooled one", where
        )
        pool.putconn(conn)
        pool.drain()
        conn = pool.getconn()
    try:
        with conn:
            yield conn
    finally:
        pool.putconn(conn)


class TextLoader(psycopg.adapt.Loader):
    """Loads text as UTF-8; bytes that are not UTF-8 become lone surrogates.

    The engine's connections ask for UTF-8 (so the server converts every
    character a UTF-8 or otherwise encoded database holds), but a SQL_ASCII
    database stores any bytes and sends them unconverted. psycopg's own
    loader would then raise in the middle of a claim, or return bytes, and
    one such row would stop every claim. Loaded this way the row reads, and
    the runner refuses that row alone, as on SQLite.
    """

    def load(self, data: Buffer) -> str:
        """Returns data decoded as UTF-8, with undecodable bytes as surrogates."""
        return bytes(data).decode("utf-8", "surrogateescape")


def client_encoding(conn: _Connection) -> str:
    """The encoding the engine's text travels in: UTF-8, whatever the URL asks.

    Another client encoding would make the server refuse, for the whole
    claim, a row with a character that encoding cannot hold. A SQL_ASCII
    database is the exception: it sends its bytes unconverted only to a
    SQL_ASCII client, and refuses bytes that are not UTF-8 to a UTF-8 one.
    """
    server = conn.info.parameter_status("server_encoding")
    return "SQL_ASCII" if server == "SQL_ASCII" else "UTF8"
