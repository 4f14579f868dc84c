"""The PostgreSQL engine's pooled connections: how they read text, how they come and go.

Each new connection reads every stored text (UTF-8, with bytes that are not
UTF-8 as lone surrogates; see ``TextLoader`` and ``client_encoding``), so one
bad row cannot stop a claim. Connections are opened on demand, by the write
that needs one, in its own thread: there is no background reconnect to wait
for. After a server restart every pooled connection is dead: the first one
found dead drains the pool, so a write opens one fresh connection instead of
going through the dead ones.
"""

import collections
import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable

import psycopg
from psycopg.abc import Buffer
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow

from jobtable._errors import StoreError

_Connection = psycopg.Connection[TupleRow]

_logger = logging.getLogger("jobtable.postgres")

MAX_IDLE = 600.0
"""Seconds an idle connection is kept before the pool closes it."""


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
        conn.execute("")
    except psycopg.Error:
        return True
    return False


def connect(
    url: str, prepare: Callable[[_Connection], None], *, shared: bool = False
) -> _Connection:
    """A new autocommit connection to url, prepared by prepare; closed again if prepare raises.

    With shared (url is a pooler's, whose server connections other clients
    use in turn), the connection never prepares a statement on the server:
    a prepared statement lives in one server session, which the pooler may
    hand to another client, or not give this one again.
    """
    if shared:
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=None)
    else:
        conn = psycopg.connect(url, autocommit=True)
    try:
        prepare(conn)
    except BaseException:
        conn.close()
        raise
    return conn


class Pool:
    """At most max_size autocommit connections to url, opened when a caller needs one.

    ``connection`` hands out an idle connection that was alive as it left
    the pool, or, when none is idle, connects in the caller's thread: a
    server that cannot be reached raises psycopg's error to that caller at
    once, and the next call tries afresh. So a write after an outage waits
    for nothing but its own connection attempt, and how often to try again
    is the caller's choice (the runner's ``retry_backoff`` and heartbeat).
    configure prepares each new connection; shared is ``connect``'s (url is
    a pooler's). A caller finding all max_size
    connections in use waits up to timeout seconds for one, then gets a
    transient StoreError. Idle connections unused for ``MAX_IDLE`` seconds are closed.
    Safe to use from any thread.
    """

    def __init__(
        self,
        url: str,
        where: str,
        *,
        max_size: int,
        configure: Callable[[_Connection], None],
        timeout: float = 30.0,
        shared: bool = False,
    ) -> None:
        self.max_size = max_size
        """How many connections may be open at once."""
        self._url = url
        self._where = where
        self._configure = configure
        self._timeout = timeout
        self._shared = shared
        self._lock = threading.Lock()
        # How many connections are lent, the condition a caller waits on for
        # one to come back when max_size are, and how many wait; all under
        # _lock. (One lock for the count and the idle connections: a
        # semaphore beside it cost each checkout more Python than the rest.)
        self._lent = 0
        self._returned = threading.Condition(self._lock)
        self._waiting = 0
        # Idle connections with the drain generation they were opened in and
        # when they were returned, the most recently returned last.
        self._idle: collections.deque[tuple[_Connection, int, float]] = collections.deque()
        self._generation = 0
        self._closed = False

    def connection(self) -> contextlib.AbstractContextManager[_Connection]:
        """A connection alive as it left the pool; returned to the pool after, unless broken."""
        return _Lent(self)

    def _lend(self) -> tuple[_Connection, int]:
        # A connection and its generation, counted as lent.
        with self._lock:
            if self._lent >= self.max_size:
                self._waiting += 1
                try:
                    freed = self._returned.wait_for(
                        lambda: self._lent < self.max_size, self._timeout
                    )
                finally:
                    self._waiting -= 1
                if not freed:
                    # Transient: the same call succeeds once one comes back.
                    raise StoreError(
                        f"postgres store {self._where}: all {self.max_size} connections "
                        f"stayed in use for {self._timeout:g} s",
                        transient=True,
                    )
            self._lent += 1
        try:
            return self._take()
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        with self._lock:
            self._free()

    def _free(self) -> None:
        # Called under _lock: one lent connection's place is free again.
        self._lent -= 1
        if self._waiting:
            self._returned.notify()

    def _take(self) -> tuple[_Connection, int]:
        while True:
            with self._lock:
                if self._closed:
                    raise StoreError(f"postgres store {self._where}: the store is closed")
                stale = self._expire(time.monotonic())
                entry = self._idle.pop() if self._idle else None
                generation = self._generation
            for old in stale:
                old.close()
            if entry is None:
                return self._connect(), generation
            conn, _, _ = entry
            if not dead(conn):
                return conn, generation
            _logger.info(
                "postgres store %s: found a dead connection, replacing every pooled one",
                self._where,
            )
            conn.close()
            self.drain()

    def _expire(self, moment: float) -> list[_Connection]:
        # Called with the lock held: takes out the idle connections unused
        # for MAX_IDLE, the least recently returned being first.
        stale = []
        while self._idle and moment - self._idle[0][2] > MAX_IDLE:
            stale.append(self._idle.popleft()[0])
        return stale

    def _connect(self) -> _Connection:
        return connect(self._url, self._configure, shared=self._shared)

    def _give_back(self, conn: _Connection, generation: int) -> None:
        # A connection that broke, was left inside a transaction, or was
        # opened before a drain is closed rather than kept; either way its
        # place is free again.
        keep = not conn.closed and conn.pgconn.transaction_status == TransactionStatus.IDLE
        with self._lock:
            self._free()
            if keep and not self._closed and generation == self._generation:
                self._idle.append((conn, generation, time.monotonic()))
                return
        conn.close()

    def drain(self) -> None:
        """Closes every idle connection; one in use is closed when it comes back."""
        with self._lock:
            self._generation += 1
            idle = [conn for conn, _, _ in self._idle]
            self._idle.clear()
        for conn in idle:
            conn.close()

    def close(self) -> None:
        """Closes the pool: idle connections now, one in use as it comes back.

        ``connection`` raises StoreError afterwards.
        """
        with self._lock:
            self._closed = True
        self.drain()


class _Lent:
    """The context of one connection lent by a pool (``Pool.connection``)."""

    __slots__ = ("_conn", "_generation", "_pool")

    def __init__(self, pool: Pool) -> None:
        self._pool = pool

    def __enter__(self) -> _Connection:
        self._conn, self._generation = self._pool._lend()
        return self._conn

    def __exit__(self, *exc_info: object) -> None:
        self._pool._give_back(self._conn, self._generation)


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
