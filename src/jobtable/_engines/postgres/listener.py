"""The PostgreSQL engine's listener: a connection that LISTENs and a thread that wakes runners."""

import functools
import logging
import threading
from collections.abc import Callable

import psycopg
from psycopg.rows import TupleRow

from jobtable._backoff import WriteBackoff
from jobtable._engines.postgres.pool import connect
from jobtable.db.postgres import schema_version

_Connection = psycopg.Connection[TupleRow]

RECONNECT = WriteBackoff(0.1, 5.0)
"""The listener's default wait between attempts to reconnect."""

_STOP_POLL = 0.2
"""Seconds the listener waits for a notification before it checks for stop."""

CANCEL_NOTICE = "cancel"
"""The payload of the notification NotifyCancel sends; an enqueue's is empty."""

READY_PREFIX = "ready:"
"""What begins the payload of a JobsReleased notification; the queue's name follows."""

RELEASED_NOTICE = "released"
"""The payload of WakeRunners and of the settles that made jobs of any queue ready."""

_logger = logging.getLogger("jobtable.postgres")


def listen_for_enqueues(conn: _Connection) -> None:
    """LISTENs on conn for enqueues into its current schema (and cancel requests).

    The session is exempt from idle_session_timeout (KeepIdleSession): it
    waits idle for notifications by design, and a role's timeout would end
    it again and again.
    """
    q = schema_version.Querier(conn)
    q.keep_idle_session()
    q.listen_for_enqueues()


def listen_for_ended(conn: _Connection) -> None:
    """LISTENs on conn for the ends of its current schema's jobs (ListenForEndedJobs).

    Exempt from idle_session_timeout, as ``listen_for_enqueues``.
    """
    q = schema_version.Querier(conn)
    q.keep_idle_session()
    q.listen_for_ended_jobs()


class Listener:
    """One ``PostgresEngine.listen``: a connection that LISTENs and a thread that wakes.

    listen runs the LISTEN statement on a new connection; reconnect is the
    wait between attempts to reopen a lost connection. A notification whose
    payload is CANCEL_NOTICE calls cancelled (when given) instead of wake;
    one whose payload is READY_PREFIX and a queue's name calls ready(queue)
    (when given) instead of wake; one whose payload is RELEASED_NOTICE calls
    released (when given) instead of wake; with notices, every
    notification's payload goes to notices instead.
    """

    def __init__(
        self,
        url: str,
        where: str,
        wake: Callable[[], None],
        *,
        listen: Callable[[_Connection], None],
        reconnect: WriteBackoff = RECONNECT,
        cancelled: Callable[[], None] | None = None,
        ready: Callable[[str], None] | None = None,
        released: Callable[[], None] | None = None,
        notices: Callable[[str], None] | None = None,
    ) -> None:
        self._url = url
        self._where = where
        self._wake = wake
        self._cancelled = cancelled
        self._ready = ready
        self._released = released
        self._notices = notices
        self._listen = listen
        self._reconnect = reconnect
        self._stopping = threading.Event()
        # Held while wake runs, so stop can wait for it; reentrant, so wake
        # itself may stop listening.
        self._waking = threading.RLock()
        self._conn: _Connection | None = None
        self._thread = threading.Thread(target=self._loop, name="jobtable-listen", daemon=True)

    def start(self) -> None:
        """Listens now if it can, then starts the thread that waits for notifications."""
        try:
            self._conn = self._connect()
        except psycopg.Error as err:
            _logger.warning(
                "postgres store %s: cannot listen for enqueues yet, retrying: %s", self._where, err
            )
        self._thread.start()

    def stop(self) -> None:
        """Stops calling wake, at once; the thread closes the connection soon after.

        Waits for a wake under way to return, so wake is never called after
        stop returns. Not joining the thread keeps stop from waiting out its
        poll for notifications.
        """
        with self._waking:
            self._stopping.set()

    def _connect(self) -> _Connection:
        # Autocommit, so that LISTEN takes effect at once and no transaction
        # stays open while the connection waits.
        return connect(self._url, self._listen)

    def _call_wake(self, payload: str = "") -> None:
        call = self._wake
        if self._notices is not None:
            call = functools.partial(self._notices, payload)
        elif payload == CANCEL_NOTICE and self._cancelled is not None:
            call = self._cancelled
        elif payload.startswith(READY_PREFIX) and self._ready is not None:
            call = functools.partial(self._ready, payload[len(READY_PREFIX) :])
        elif payload == RELEASED_NOTICE and self._released is not None:
            call = self._released
        with self._waking:
            if self._stopping.is_set():
                return
            try:
                call()
            except Exception:
                _logger.exception("postgres store %s: wake failed", self._where)

    def _loop(self) -> None:
        conn = self._conn
        delay = self._reconnect.first
        # Whether the outage under way was logged already (the loss of the
        # connection, or a first attempt to reconnect that failed): the
        # server may refuse connections for minutes, and one warning says
        # so; the attempts after it are DEBUG records.
        failed = conn is None
        try:
            while not self._stopping.is_set():
                if conn is None:
                    try:
                        conn = self._connect()
                    except psycopg.Error as err:
                        _logger.log(
                            logging.DEBUG if failed else logging.WARNING,
                            "postgres store %s: cannot listen for enqueues, retrying in %.1f s: %s",
                            self._where,
                            delay,
                            err,
                        )
                        failed = True
                        self._stopping.wait(delay)
                        delay = self._reconnect.after(delay)
                        continue
                    delay = self._reconnect.first
                    failed = False
                    _logger.info("postgres store %s: listening for enqueues again", self._where)
                    # Enqueues, releases and cancels committed while no
                    # connection listened woke no one (notices take '' as
                    # "check everything").
                    self._call_wake("" if self._notices else RELEASED_NOTICE)
                    self._call_wake(CANCEL_NOTICE)
                try:
                    for notice in conn.notifies(timeout=_STOP_POLL):
                        self._call_wake(notice.payload)
                except psycopg.Error as err:
                    _logger.warning(
                        "postgres store %s: lost the listening connection, reconnecting: %s",
                        self._where,
                        err,
                    )
                    conn.close()
                    conn = None
                    failed = True
        finally:
            if conn is not None:
                conn.close()
