"""The store: the database jobs live in, which enqueuers and runners share."""

import os
import re
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Self

from jobtable._engine import Engine
from jobtable._errors import StoreError
from jobtable._job import Job, job_from_row
from jobtable._ops import GetJob
from jobtable._sqlite import SQLiteEngine
from jobtable._values import redact_url

_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SQLITE_PREFIX = "sqlite:///"
_POSTGRES_SCHEMES = frozenset({"postgresql", "postgres"})


def _open_postgres(url: str, *, durable: bool) -> Engine:
    try:
        # Imported here: psycopg is an optional dependency, and SQLite users
        # never load it.
        from jobtable._postgres import PostgresEngine
    except ModuleNotFoundError as err:
        if err.name is not None and err.name.split(".")[0] in ("psycopg", "psycopg_pool"):
            raise StoreError(
                f"cannot open {redact_url(url)}: PostgreSQL needs psycopg; "
                "install jobtable[postgres]"
            ) from err
        raise
    engine: Engine = PostgresEngine.open(url, durable=durable)
    return engine


class Store:
    """The database jobs live in: a SQLite file or a PostgreSQL server.

    A store opened once is shared by every runner and enqueuer of the process
    and is safe to use from any thread. A web process that only enqueues and
    reads jobs needs a store and its kinds' declarations, no runner. Close it
    when done, or use it as a context manager; a closed store raises
    StoreError.
    """

    engine: Engine
    """The database engine every read and write of the store goes through.

    Its type is the ``Engine`` protocol of ``jobtable._engine`` (write, read,
    their async forms, listen, close), which takes operations of that
    module's ``Queries``: a stable seam for tests and tools, not part of the
    application API.
    """

    max_payload_bytes: int
    """The largest encoded payload an enqueue through the store accepts."""

    def __init__(self, engine: Engine, *, target: str, max_payload_bytes: int = 1 << 20) -> None:
        """Wraps an open engine; repr shows target, without any password.

        Use ``Store.open`` instead.
        """
        if max_payload_bytes < 1:
            raise ValueError(
                f"jobtable: max_payload_bytes must be positive, got {max_payload_bytes!r}"
            )
        self.engine = engine
        self.max_payload_bytes = max_payload_bytes
        # Only the redacted form is kept, so no password lingers in the object.
        self._target = redact_url(target) if _URL_SCHEME.match(target) else target
        self._lock = threading.Lock()
        self._wakes: list[Callable[[], None]] = []

    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str],
        *,
        durable: bool = True,
        busy_timeout: float = 5.0,
        readers: int = 4,
        max_payload_bytes: int = 1 << 20,
    ) -> Self:
        """Opens the store at target, creating the database or its schema when missing.

        target is a SQLite file: a path, or ``sqlite:///relative/path`` or
        ``sqlite:////absolute/path``; or a PostgreSQL server:
        ``postgresql://…`` (``postgres://…``), which needs the
        ``jobtable[postgres]`` extra. Raises StoreError, naming the target and
        the cause, for a target that cannot be used, and leaves it unchanged.

        With durable (the default), a write that returned survives a power
        loss. Without it, a power loss may lose the last writes but never
        corrupts the database. busy_timeout (SQLite, in seconds) is how long a
        write waits for another process's lock; readers (SQLite) is how many
        reads may run at once. max_payload_bytes is the largest encoded
        payload an enqueue through the store accepts (1 MiB by default).
        """
        if not isinstance(target, str | os.PathLike):
            raise TypeError(f"Store.open: target is {type(target).__name__}, want str or a path")
        if isinstance(target, str) and (match := _URL_SCHEME.match(target)):
            scheme = match.group(1).lower()
            if scheme in _POSTGRES_SCHEMES:
                engine = _open_postgres(target, durable=durable)
                return cls(engine, target=target, max_payload_bytes=max_payload_bytes)
            if scheme != "sqlite" or not target.startswith(_SQLITE_PREFIX):
                raise StoreError(
                    f"cannot open {redact_url(target)}: want a file path, "
                    "sqlite:///path or postgresql://…"
                )
            target = target[len(_SQLITE_PREFIX) :]
        sqlite = SQLiteEngine.open(
            target, durable=durable, busy_timeout=busy_timeout, readers=readers
        )
        return cls(sqlite, target=str(sqlite.path), max_payload_bytes=max_payload_bytes)

    def get(self, job_id: str) -> Job:
        """Returns the job with id, its result as plain JSON data.

        Raises JobNotFound for an unknown id. ``job.model_dump_json()`` is the
        job as an API returns it.
        """
        return job_from_row(self.engine.read(GetJob(job_id)))

    async def aget(self, job_id: str) -> Job:
        """The async form of get."""
        return job_from_row(await self.engine.aread(GetJob(job_id)))

    def _watch_enqueues(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Calls wake after each enqueue through this store commits; returns what stops it.

        A runner uses it to wake an idle worker at once for a job enqueued in
        its own process. wake runs in the enqueuing thread and must return
        quickly; stopping twice does nothing.
        """
        with self._lock:
            self._wakes.append(wake)

        def stop() -> None:
            with self._lock:
                if wake in self._wakes:
                    self._wakes.remove(wake)

        return stop

    def _enqueued(self) -> None:
        """Calls every wake given to _watch_enqueues: an enqueue through the store committed."""
        with self._lock:
            wakes = list(self._wakes)
        for wake in wakes:
            wake()

    def close(self) -> None:
        """Finishes the writes under way and closes the database; again does nothing."""
        self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<jobtable.Store {type(self.engine).__name__} {self._target!r}>"
