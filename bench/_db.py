"""What every database of the benchmark offers, the rows it writes, and helpers its loops share.

A ``Database`` is one fresh SQLite file or PostgreSQL schema with jobtable's
schema applied (by ``jobtable.Store.open``, as an application would). Besides
the store's target it keeps a raw connection of the benchmark's own for setup
(resetting, bulk-loading finished rows, checking whether work is left) and for
the raw loops: the generated Querier's SQL constants (``jobtable.db.*.jobs``),
executed in a tight Python loop without the runner, at the same durability
as the store (SQLite WAL with synchronous=FULL; PostgreSQL with
synchronous_commit=on). Each engine's class, its setup and its raw loops are
in ``bench._sqlite_db`` and ``bench._postgres_db``; ``bench._databases``
creates one by engine name.
"""

import abc
import datetime
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable

import jobtable

KIND = "noop"
PAYLOAD = '{"t":0.0}'
RESULT = "null"
RUNNER = "raw"
FILL_RUNNER = "bench-fill"
WAITING_KIND = "bench-waiting"
"""The kind of the queued jobs fill_finished adds beside the finished rows: scheduled
ones, due in a year, and ready ones of a lower priority than the measured jobs."""
WAITING = 10_000
"""How many of each kind of waiting job fill_finished adds."""
BATCH = 100
"""Jobs per transaction in the batched raw loops, and per enqueue_many call."""


def new_id() -> str:
    """A job id as the library makes them: 128 random bits, URL-safe."""
    return secrets.token_urlsafe(16)


def utc_text() -> str:
    """The time as UTC text of fixed width, the form SQLite's rows hold."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Database(abc.ABC):
    """A fresh database with jobtable's schema, its store target and a raw connection."""

    engine: str
    target: str
    store: jobtable.Store
    """The library's store on this database, opened before any raw connection (see create)."""

    @abc.abstractmethod
    def version(self) -> str:
        """The engine's version."""

    @abc.abstractmethod
    def pending(self) -> bool:
        """Whether any job is queued or running: read from the table."""

    @abc.abstractmethod
    def reset(self, keep_upto: int = 0) -> None:
        """Deletes every job whose seq is above keep_upto, and every runner row."""

    @abc.abstractmethod
    def max_seq(self) -> int:
        """The highest seq in the table, 0 when empty."""

    @abc.abstractmethod
    def fill_finished(self, count: int) -> None:
        """Bulk-loads count succeeded jobs, fast and not durably (setup only)."""

    @abc.abstractmethod
    def results(self, kind: str) -> list[str]:
        """The result texts of the finished jobs of kind."""

    def finished(self) -> int:
        """How many jobs succeeded or failed."""
        return self.count("succeeded") + self.count("failed")

    def failed(self) -> int:
        """How many jobs failed."""
        return self.count("failed")

    @abc.abstractmethod
    def count(self, status: str) -> int:
        """How many jobs have status."""

    @abc.abstractmethod
    def raw_work(self, batch: int) -> None:
        """Claims batch jobs one statement each and marks them succeeded, in one transaction."""

    @abc.abstractmethod
    def close(self) -> None:
        """Closes the connections and removes the database."""

    @abc.abstractmethod
    def reconnect(self) -> None:
        """Opens the raw connection anew, after the server dropped it."""

    # The raw loops. Each returns the seconds the timed part took.

    @abc.abstractmethod
    def raw_life(self, count: int, mode: str) -> float:
        """count job lives (insert, claim, succeed) with the store's SQL.

        mode "step" commits each statement, "life" each job life, "batch"
        BATCH job lives per transaction: BATCH inserts, one claim of BATCH
        jobs, BATCH successes (on PostgreSQL, pipelined). A claim per job
        in a batch costs more on PostgreSQL: each one walks past the index
        entries of the rows the transaction already claimed.
        """

    @abc.abstractmethod
    def raw_insert(self, count: int, batch: int) -> float:
        """count inserts of queued jobs, batch per transaction (1: each its own)."""

    @abc.abstractmethod
    def raw_claim(self, count: int, batch: int) -> float:
        """count claims of one job each, batch per transaction.

        The jobs are inserted first, untimed.
        """

    @abc.abstractmethod
    def raw_cycle(self, count: int, size: int) -> float:
        """count jobs through claim and finish, size a transaction, as size workers batch.

        The jobs are inserted first, untimed, as the end-to-end runs enqueue
        them. Each transaction finishes the size jobs the one before claimed
        and claims size more: the most a runner of size workers, all freed at
        once, can put in one commit without claiming ahead of its workers.
        """

    @abc.abstractmethod
    def raw_start_latency(self, count: int) -> list[float]:
        """Seconds from before an insert's commit to after the claim that returns it, per job."""

    def raw_life_threads(self, count: int, connections: int) -> float:
        """raw_life(count, "batch") split over connections at once, where writers can overlap."""
        raise NotImplementedError


PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def drop_anew(url: str, drop: str, tries: int = 60) -> None:
    """Runs drop on a new connection to url, trying for up to a minute.

    Other test suites restart the shared server at times; a benchmark that
    lost its connection still removes what it created.
    """
    import psycopg

    for attempt in range(tries):
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=5) as admin:
                admin.execute(drop)
            return
        except psycopg.OperationalError:
            if attempt == tries - 1:
                raise
            time.sleep(1)


def run_threads(threads: int, work: Callable[[int, int], None], count: int) -> float:
    """Seconds for threads threads to run work(index, share) at once, share = count // threads.

    The clock runs from a barrier every thread has reached, started untimed
    before it, until the last one returns; the first error a thread raised
    is raised here.
    """
    share = count // threads
    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def body(index: int) -> None:
        barrier.wait()
        try:
            work(index, share)
        except BaseException as err:
            errors.append(err)

    pool = [threading.Thread(target=body, args=(i,)) for i in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    begin = time.perf_counter()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - begin
    if errors:
        raise errors[0]
    return elapsed


def redacted(url: str) -> str:
    """url without any password, to print."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))
