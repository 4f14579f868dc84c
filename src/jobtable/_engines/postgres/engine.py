"""The PostgreSQL engine: many runner processes on many machines share one queue.

Every operation runs in its own transaction on a pooled connection, in the
caller's thread; the async fronts run the same call in a worker thread.
Claims lock the rows they take (``FOR UPDATE SKIP LOCKED``), so concurrent
workers never share a job. An insert trigger notifies the schema's channel
when an enqueue commits, and ``listen`` turns those notifications into
wake-ups on a dedicated connection.

Every statement comes from the generated ``jobtable.db.postgres`` package,
which nothing outside this engine's package imports: its adapters
(``queries``, ``job_rows``, ``operator_queries``, ``transaction``) fit it to
the ``Queries`` seam, and this module translates psycopg's errors to
StoreError in one function.
"""

import asyncio
import concurrent.futures
import functools
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Self, TypeVar

import psycopg
from psycopg import conninfo
from psycopg.rows import TupleRow

from jobtable._backoff import WriteBackoff
from jobtable._engines.base import Queries, Statement, as_insert
from jobtable._engines.postgres.batch import GroupCommit
from jobtable._engines.postgres.claim_cursor import ClaimCursors
from jobtable._engines.postgres.listener import (
    RECONNECT,
    Listener,
    listen_for_ended,
    listen_for_enqueues,
)
from jobtable._engines.postgres.pool import Pool, TextLoader, client_encoding, connect
from jobtable._engines.postgres.queries import queries as _queries
from jobtable._engines.postgres.schema import apply_schema
from jobtable._engines.postgres.schema import schema_version as stored_schema_version
from jobtable._engines.postgres.transaction import (
    JobsTable,
    aread_in,
    awrite_in,
    jobs_table,
    read_in,
    write_in,
)
from jobtable._errors import StoreError
from jobtable._values import redact_url, scrub
from jobtable.db.postgres import schema_version
from jobtable.db.postgres.schema import SCHEMA

T = TypeVar("T")
_Connection = psycopg.Connection[TupleRow]

_logger = logging.getLogger("jobtable.postgres")

POLLING_WARNING = (
    "postgres store %s: pooled URL without listen_url, so nothing listens: "
    "a runner finds the jobs other processes enqueue, and cancel requests, only "
    "at its next poll (poll_interval, 1 s by default) instead of at once, and a "
    "wait for a job's end returns up to 1 s after the end; pass listen_url=, a "
    "direct (session) URL to the same database, to be woken at once"
)
"""The warning logged at the first ``listen`` of an engine that cannot listen; %s is the store."""

CONNECT_TIMEOUT = 10
"""Seconds a connection may take to open, unless the URL or PGCONNECT_TIMEOUT sets connect_timeout.

Without one, libpq waits for the operating system's TCP timeout (minutes)
on a host that accepts the connection and never answers.
"""

APPLICATION_NAME = "jobtable"
"""The application_name of the engine's connections, unless the URL or PGAPPNAME sets one.

``pg_stat_activity`` shows it, so an operator finds (and a test may end)
the sessions of jobtable's processes; ``?application_name=`` in the URL
tells one deployment's from another's.
"""

IDLE_IN_TRANSACTION_TIMEOUT = 5.0
"""Seconds a transaction of the engine's own may wait on its client.

That is, for the client's next statement (``idle_in_transaction_session_timeout``)
or, over TCP, for it to take a reply larger than the connection's buffers
(``tcp_user_timeout``: a claim of many large payloads). The server then
ends the session, and with it the transaction and its locks: a process
stopped inside a transaction (SIGSTOP, a VM pause, a
debugger, a swap storm) blocks other runners for at most this long, not for
as long as it is stopped. The engine's transactions send their statements
one after another with nothing to wait for in between, so a live process
leaves them idle for milliseconds; the runner's default lease (30 s) is six
times as long, so a queue whose claims a frozen runner blocked resumes long
before the lease ends that runner's jobs. The stopped process, once
continued, finds its connection closed: a transient StoreError, which the
runner retries. The application's own transactions (``conn=``) are never
bounded.
"""


MAX_CONNECTIONS = 10
"""How many connections an engine keeps for its operations unless told (``max_connections``)."""


def _connection_url(url: str, where: str) -> str:
    """Returns url with CONNECT_TIMEOUT and APPLICATION_NAME added where nothing sets them.

    The URL's ``connect_timeout`` or PGCONNECT_TIMEOUT, and its
    ``application_name`` or PGAPPNAME, win. Every connection of the engine's
    own (pooled and listening) opens from the URL this returns, so this is
    the one place both are decided. Raises StoreError, naming the URL
    without its password, for a URL libpq cannot parse.
    """
    try:
        params = conninfo.conninfo_to_dict(url)
    except psycopg.Error as err:
        raise StoreError(f"cannot open {where}: malformed URL: {scrub(str(err), url)}") from None
    added: dict[str, str | int] = {}
    if "connect_timeout" not in params and not os.environ.get("PGCONNECT_TIMEOUT"):
        added["connect_timeout"] = CONNECT_TIMEOUT
    if "application_name" not in params and not os.environ.get("PGAPPNAME"):
        added["application_name"] = APPLICATION_NAME
    return conninfo.make_conninfo(url, **added) if added else url


def _store_error(where: str, doing: str, err: psycopg.Error) -> StoreError:
    """Returns the StoreError for err; the one place psycopg's errors are translated.

    An OperationalError (a lost connection, a server shutting down, a
    deadlock, a full disk, a pool timeout), an InterfaceError, or the end
    of a session whose transaction sat idle past
    ``IDLE_IN_TRANSACTION_TIMEOUT`` (the process was stopped) is transient:
    the same call may succeed later. Any other (bad data, a constraint, a
    statement the server refuses) is not.
    """
    transient = isinstance(
        err,
        psycopg.OperationalError
        | psycopg.InterfaceError
        | psycopg.errors.IdleInTransactionSessionTimeout,
    )
    return StoreError(
        f"postgres store {where}: {doing}: {err}{_pooler_hint(err)}", transient=transient
    )


def _pooler_hint(err: psycopg.Error) -> str:
    """The advice err calls for when psycopg's own prepared statements clashed.

    psycopg names the statements it prepares ``_pg3_N``; one that already
    exists, or no longer does, on the connection that should hold it means
    the server session is shared, as a connection pooler in transaction
    mode shares it. Empty for any other error.
    """
    clash = psycopg.errors.DuplicatePreparedStatement | psycopg.errors.InvalidSqlStatementName
    if not isinstance(err, clash) or '"_pg3_' not in str(err):
        return ""
    return (
        "; the server session is shared with another client, as a connection pooler "
        "(PgBouncer in transaction mode) shares it: open the store with pooled=True "
        "(--pooled, JOBTABLE_POOLED=1 for the jobtable command)"
    )


def _configure(
    durable: bool, idle_timeout: float, *, pooled: bool = False
) -> Callable[[_Connection], None]:
    """Returns what prepares each new connection of the engine's own.

    It loads text with ``TextLoader``. On a direct connection it also sets
    the client encoding (``client_encoding``) and how many seconds a
    transaction may sit idle (idle_timeout, see
    ``IDLE_IN_TRANSACTION_TIMEOUT``), whatever the role sets, exempts the
    session from idle_session_timeout (the pool closes its idle connections
    itself, after ``MAX_IDLE``), and without durable turns
    synchronous_commit off. With pooled it sets nothing on the session: a
    pooler would hand the setting to whichever client gets that server
    connection next (see ``_pooled_url`` for the encoding).
    """
    idle_ms = max(1, round(idle_timeout * 1000))

    def configure(conn: _Connection) -> None:
        conn.adapters.register_loader("text", TextLoader)
        if pooled:
            return
        q = schema_version.Querier(conn)
        q.configure_session(encoding=client_encoding(conn), idle_ms=idle_ms)
        q.keep_idle_session()
        if not durable:
            q.disable_synchronous_commit()

    return configure


def _pooled_url(url: str, conn: _Connection) -> str:
    """Returns url asking, in its startup parameters, for the encoding conn's server needs.

    Behind a pooler the encoding cannot be SET on the session; PgBouncer
    takes client_encoding as a startup parameter and sets it on whichever
    server connection serves the client (``client_encoding``).
    """
    return conninfo.make_conninfo(url, client_encoding=client_encoding(conn))


def _check_pooled(pooled: bool, durable: bool) -> None:
    """Raises ValueError for durable=False on a pooled URL, naming the setting to use instead."""
    if pooled and not durable:
        raise ValueError(
            "durable=False needs a session of its own, which a pooled URL has not; "
            "set synchronous_commit on the server for the pooler's role instead "
            "(ALTER ROLE name SET synchronous_commit = off) and keep durable=True"
        )


def read_schema_version(url: str) -> int:
    """Returns the version of the jobtable schema at url, 0 when it has none; changes nothing.

    Raises StoreError as ``PostgresEngine.open`` does for a bad URL, a server
    it cannot reach, or a schema newer than this library's or unknown.
    """
    where = redact_url(url)
    url = _connection_url(url, where)
    try:
        with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
            return stored_schema_version(schema_version.Querier(conn), where)
    except psycopg.Error as err:
        raise _store_error(where, "open", err) from err


class PostgresEngine:
    """A PostgreSQL database behind the runner (see ``jobtable._engines.base.Engine``).

    The tables live in the first schema of the connection's search_path, so
    ``?options=-csearch_path%3Dname`` in the URL gives one application, or one
    test, its own queue. Safe to use from any thread.
    """

    def __init__(
        self,
        pool: Pool,
        *,
        url: str,
        where: str,
        reconnect: WriteBackoff = RECONNECT,
        listen_url: str | None = None,
        listen_where: str | None = None,
    ) -> None:
        """Wraps an open pool whose database has the schema. Use ``PostgresEngine.open``.

        Listeners connect to listen_url; with None, ``listen`` only polls.
        listen_where is listen_url as the listeners' messages show it, when it
        is not the store's own URL (None: it is).
        """
        self._pool = pool
        self._listen_url = listen_url
        self._listen_where = (
            where if listen_where is None else f"{where} (listening on {listen_where})"
        )
        self._reconnect = reconnect
        # The async forms run on threads of their own, one per pooled
        # connection: asyncio's default executor has only a few (six on two
        # cores), which would cap the writes under way below the pool's size.
        self._threads = concurrent.futures.ThreadPoolExecutor(
            max_workers=pool.max_size, thread_name_prefix="jobtable-postgres"
        )
        self._url = url
        self._where = where
        self._lock = threading.Lock()
        self._listeners: set[Listener] = set()
        self._closed = False
        # Whether POLLING_WARNING was logged (once per engine, at the first listen).
        self._warned = False
        self._jobs_table: JobsTable | None = None
        # Where this process's claims of each queue stopped (claim_cursor).
        self._cursors = ClaimCursors()
        # Concurrent enqueues share transactions (see the batch module).
        self._enqueues = GroupCommit(
            where,
            connection=pool.connection,
            error=lambda err: _store_error(where, "write", err),
        )

    @classmethod
    def open(
        cls,
        url: str,
        *,
        durable: bool = True,
        max_connections: int = MAX_CONNECTIONS,
        reconnect: WriteBackoff = RECONNECT,
        upgrade: bool = True,
        idle_timeout: float = IDLE_IN_TRANSACTION_TIMEOUT,
        pooled: bool = False,
        listen_url: str | None = None,
    ) -> Self:
        """Connects to url, creating the schema when missing or upgrading it.

        Raises StoreError, naming the server (never the password) and the
        cause, for a malformed URL, when the server cannot be reached within
        the connect timeout (CONNECT_TIMEOUT, 10 s, unless the URL's
        ``connect_timeout`` or PGCONNECT_TIMEOUT sets another), or when its
        schema version is newer than this library's or unknown; the database
        is then unchanged. The first schema of the search_path is created
        when it does not exist. Every connection's application_name is
        APPLICATION_NAME ("jobtable") unless the URL's or PGAPPNAME names
        another. With durable (the
        default) a write that returned survives a server crash; without it
        (``synchronous_commit=off``) a crash may lose the last moments' writes,
        never corrupt the queue. At most max_connections connections are open
        at once, plus one per ``listen``; each is opened by the write that
        needs it (see ``Pool``), so once an unreachable server is back the
        next write connects at once. reconnect is how long a listener waits
        between attempts to reopen its lost connection. Without upgrade, a
        schema that is missing or older is refused (StoreError) and left as
        it is. A transaction of the engine's own that waits idle_timeout
        seconds for its client's next statement (the process was stopped) is
        ended by the server, its locks released (``IDLE_IN_TRANSACTION_TIMEOUT``).

        pooled says url is a pooler's (PgBouncer in transaction or session
        mode): the engine then never prepares a statement on the server nor
        sets anything on a session, and idle_timeout is left to the pooler
        (PgBouncer's ``idle_transaction_timeout``) or the role's settings;
        durable=False is refused (ValueError), since it is a session
        setting. Listeners (``listen``, ``listen_ended``) need a session:
        they connect to listen_url, a direct URL to the same database (url
        when not pooled and None). A pooled url without listen_url listens
        to nothing: runners and waits find their work by polling, and the
        first of them to start logs a warning saying so (a process that never
        listens, such as one that only enqueues, is not warned).
        """
        if max_connections < 1:
            raise ValueError(f"max_connections is {max_connections}, want at least 1")
        if not idle_timeout > 0:
            raise ValueError(f"idle_timeout is {idle_timeout}, want more than 0 seconds")
        _check_pooled(pooled, durable)
        where = redact_url(url)
        listen_where = None if listen_url in (None, url) else redact_url(str(listen_url))
        url = _connection_url(url, where)
        if listen_url is not None:
            listen_url = _connection_url(listen_url, redact_url(listen_url))
        elif not pooled:
            listen_url = url
        configure = _configure(durable, idle_timeout, pooled=pooled)
        # The schema is applied on a connection of its own, before the pool
        # exists, so that an unreachable server fails now with libpq's own
        # message. It is configured as the pool's are: its transaction holds
        # the schema's lock, and an upgrade's locks of the tables.
        try:
            with connect(url, configure, shared=pooled) as conn:
                apply_schema(conn, schema_version.Querier(conn), SCHEMA, where, upgrade=upgrade)
                if pooled:
                    url = _pooled_url(url, conn)
        except psycopg.Error as err:
            raise _store_error(where, "open", err) from err
        pool = Pool(url, where, max_size=max_connections, configure=configure, shared=pooled)
        return cls(
            pool,
            url=url,
            where=where,
            reconnect=reconnect,
            listen_url=listen_url,
            listen_where=listen_where,
        )

    def __repr__(self) -> str:
        return f"PostgresEngine({self._where!r})"

    def write(self, op: Callable[[Queries], T]) -> T:
        """Runs op in one transaction and returns its value once committed.

        An exception from op rolls back its writes and reaches the caller; a
        database error, a lost connection or an unreachable server included,
        raises StoreError at once and is not retried (the runner retries with
        backoff). A connection lost
        during the commit leaves it unknown whether op's writes were kept. An
        op that is a ``Statement`` runs without BEGIN and COMMIT. Operations
        that only insert jobs (an ``Insert``: enqueues) made while another is
        under way share a transaction (``jobtable._engines.postgres.batch``);
        a lone one runs alone.
        """
        insert = as_insert(op)
        if insert is not None:
            return self._enqueues.write(insert)
        return self._run(op, "write")

    async def awrite(self, op: Callable[[Queries], T]) -> T:
        """Runs ``write(op)`` in another thread, not blocking the event loop."""
        insert = as_insert(op)
        if insert is not None:
            return await asyncio.wrap_future(self._enqueues.submit(insert))
        return await self._in_thread(op, "write")

    def read(self, op: Callable[[Queries], T]) -> T:
        """Runs op, which only reads, in one transaction; errors as for ``write``."""
        return self._run(op, "read")

    async def aread(self, op: Callable[[Queries], T]) -> T:
        """Runs ``read(op)`` in a worker thread, not blocking the event loop."""
        return await self._in_thread(op, "read")

    async def _in_thread(self, op: Callable[[Queries], T], doing: str) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._threads, self._run, op, doing)
        except RuntimeError as err:  # the executor was shut down by close
            if self._closed:
                raise StoreError(f"postgres store {self._where}: the store is closed") from err
            raise

    def write_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Runs the write op on conn, the application's psycopg connection, in its transaction.

        See ``jobtable._engines.postgres.transaction.write_in``; a psycopg error is a
        StoreError.
        """
        return self._in(write_in, conn, op, where)

    def read_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """Runs op, which only reads, on conn, the app's psycopg connection, in its transaction."""
        return self._in(read_in, conn, op, where)

    def _in(
        self,
        run: Callable[[object, JobsTable, Callable[[Queries], T], str], T],
        conn: object,
        op: Callable[[Queries], T],
        where: str,
    ) -> T:
        """Runs op on conn through run (write_in, read_in); a psycopg error is a StoreError."""
        ours = self._table()
        try:
            return run(conn, ours, op, where)
        except psycopg.Error as err:
            raise _store_error(self._where, where, err) from err

    async def awrite_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """The async form of write_in, on a psycopg.AsyncConnection."""
        return await self._ain(awrite_in, conn, op, where)

    async def aread_in(self, conn: object, op: Callable[[Queries], T], where: str) -> T:
        """The async form of read_in, on a psycopg.AsyncConnection."""
        return await self._ain(aread_in, conn, op, where)

    async def _ain(
        self,
        run: Callable[[object, JobsTable, Callable[[Queries], T], str], Awaitable[T]],
        conn: object,
        op: Callable[[Queries], T],
        where: str,
    ) -> T:
        """Runs op on conn through run (awrite_in, aread_in); a psycopg error is a StoreError."""
        ours = await self._atable()
        try:
            return await run(conn, ours, op, where)
        except psycopg.Error as err:
            raise _store_error(self._where, where, err) from err

    async def _atable(self) -> JobsTable:
        """The async form of _table: the jobs table, read off the event loop the first time."""
        ours = None if self._closed else self._jobs_table
        if ours is None:
            try:
                ours = await asyncio.get_running_loop().run_in_executor(self._threads, self._table)
            except RuntimeError as err:  # the executor was shut down by close
                raise StoreError(f"postgres store {self._where}: the store is closed") from err
        return ours

    def _table(self) -> JobsTable:
        """The store's jobs table, read once on a pooled connection and remembered."""
        if self._closed:
            raise StoreError(f"postgres store {self._where}: the store is closed")
        if self._jobs_table is None:
            try:
                with self._pool.connection() as conn:
                    self._jobs_table = jobs_table(conn)
            except psycopg.Error as err:
                raise _store_error(self._where, "read", err) from err
        return self._jobs_table

    def listen(
        self,
        wake: Callable[[], None],
        cancelled: Callable[[], None] | None = None,
        ready: Callable[[str], None] | None = None,
    ) -> Callable[[], None]:
        """Calls wake, from a daemon thread, each time a transaction that enqueued commits.

        It calls cancelled instead for a committed cancel request of a running
        job (``NotifyCancel``), and ready(queue) for an outcome that may
        release a held job of queue (``JobsReleased``), each when given. It
        listens on a connection of its own from before it returns; when it
        cannot yet, it logs a warning and keeps trying in the background. A
        lost connection is reopened with the engine's reconnect backoff (a
        doubling wait capped at 5 s by default), then wake and cancelled are
        called once for what they may have missed. wake should return fast;
        an exception from it is logged. Returns what stops listening: once it
        returns, wake is not called again and the connection closes within a
        fraction of a second; again, it does nothing. Raises StoreError once
        the engine is closed.
        """
        rewind = self._cursors.rewind

        def released() -> None:
            rewind()
            wake()

        def ready_in(queue: str) -> None:
            rewind(queue)
            (wake if ready is None else functools.partial(ready, queue))()

        return self._start(
            wake, listen_for_enqueues, cancelled=cancelled, ready=ready_in, released=released
        )

    def listen_ended(self, wake: Callable[[str], None]) -> Callable[[], None]:
        """Calls wake(ids) as a commit that ended jobs notifies (``EndedJobs``); as listen."""
        return self._start(lambda: wake(""), listen_for_ended, notices=wake)

    def _start(
        self, wake: Callable[[], None], listen: Callable[[_Connection], None], **calls: Any
    ) -> Callable[[], None]:
        """Starts a Listener on a connection of its own; returns what stops it.

        Without a listen_url (a pooled URL alone) it starts nothing: the
        callers' polls find the work, and the first call logs
        ``POLLING_WARNING``.
        """
        if self._listen_url is None:
            with self._lock:
                if self._closed:
                    raise StoreError(f"postgres store {self._where}: the store is closed")
                warn, self._warned = not self._warned, True
            if warn:
                _logger.warning(POLLING_WARNING, self._where)
            return lambda: None
        listener = Listener(
            self._listen_url,
            self._listen_where,
            wake,
            listen=listen,
            reconnect=self._reconnect,
            **calls,
        )
        with self._lock:
            if self._closed:
                raise StoreError(f"postgres store {self._where}: the store is closed")
            self._listeners.add(listener)
        listener.start()

        def stop() -> None:
            with self._lock:
                self._listeners.discard(listener)
            listener.stop()

        return stop

    def close(self) -> None:
        """Stops every listener and closes every connection; again does nothing.

        Waits for the async operations under way; a connection another thread
        still uses is closed as it comes back.
        """
        # The enqueues already queued commit first; new ones are refused.
        self._enqueues.close()
        with self._lock:
            if self._closed:
                return
            self._closed = True
            listeners = list(self._listeners)
            self._listeners.clear()
        for listener in listeners:
            listener.stop()
        self._threads.shutdown(wait=True)
        self._pool.close()

    def _run(self, op: Callable[[Queries], T], doing: str) -> T:
        if self._closed:
            raise StoreError(f"postgres store {self._where}: the store is closed")
        try:
            one_statement = isinstance(op, Statement)
            with self._pool.connection() as conn:
                q = _queries(conn, self._cursors)
                if one_statement:
                    # The pool's connections autocommit: the statement is its
                    # own transaction, with no BEGIN and COMMIT round trips.
                    done = op(q)
                else:
                    with conn.transaction():
                        done = op(q)
            if doing == "write" and getattr(q, "rewinds", False):
                self._cursors.rewind()  # it may have made jobs ready behind the places
            return done
        except BaseException as err:
            # A claim rolled back leaves its jobs ready behind the place it
            # recorded: the next claims start from each queue's head.
            self._cursors.rewind()
            if isinstance(err, psycopg.Error):
                raise _store_error(self._where, doing, err) from err
            raise
