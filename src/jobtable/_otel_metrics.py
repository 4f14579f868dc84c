"""The OpenTelemetry metrics of jobtable.otel: counters, the attempt histogram, the queue gauges.

One set of instruments per meter provider, shared by every store
instrumented with it: a provider refuses a second instrument of a name, and
would drop the second gauge's callback. The gauges observe each watched
store's backlog when the provider collects, through two reads that each
cost the backlog's size, never the table's.
"""

import dataclasses
import datetime
import threading
import weakref
from collections.abc import Iterable, Sequence

from opentelemetry import metrics

from jobtable._engines.base import Queries
from jobtable._engines.rows import BacklogRow
from jobtable._errors import StoreError
from jobtable._store import Store
from jobtable._values import timestamp

SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"
"""The semantic conventions version jobtable's attribute names follow."""

_FINAL = frozenset({"succeeded", "failed", "cancelled"})

# The boundaries the semantic conventions advise for durations in seconds.
_DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)


@dataclasses.dataclass(frozen=True, slots=True)
class QueueBacklog:
    """The read of each queue's backlog: its ready jobs, and its scheduled ones now due.

    Returns, for each queue that has any, how many wait and the earliest
    run_at among them.
    """

    now: str

    def __call__(self, q: Queries) -> dict[str, tuple[int, datetime.datetime]]:
        backlog: dict[str, tuple[int, datetime.datetime]] = {}
        rows: Iterable[BacklogRow] = [*q.count_ready_jobs(), *q.count_due_jobs(now=self.now)]
        for row in rows:
            jobs, oldest = backlog.get(row.queue, (0, row.oldest_run_at))
            backlog[row.queue] = (jobs + row.jobs, min(oldest, row.oldest_run_at))
        return backlog


class Instruments:
    """The instruments of one meter provider, and the stores its gauges observe."""

    def __init__(self, meter: metrics.Meter) -> None:
        self._enqueued = meter.create_counter(
            "jobtable.jobs.enqueued", unit="{job}", description="Jobs enqueued."
        )
        self._finished = meter.create_counter(
            "jobtable.jobs.finished",
            unit="{job}",
            description="Jobs that ended succeeded, failed or cancelled.",
        )
        self._duration = meter.create_histogram(
            "jobtable.attempt.duration",
            unit="s",
            description="How long each attempt of a job ran, claim to outcome.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        meter.create_observable_gauge(
            "jobtable.queue.depth",
            [self._depths],
            unit="{job}",
            description="Jobs queued and ready to run, per queue.",
        )
        meter.create_observable_gauge(
            "jobtable.queue.oldest_age",
            [self._ages],
            unit="s",
            description="How long the longest-waiting ready job of each queue has waited.",
        )
        self._lock = threading.Lock()
        self._stores: weakref.WeakSet[Store] = weakref.WeakSet()
        # Queues a gauge reported, per store: one that empties reports 0, not nothing.
        self._seen: weakref.WeakKeyDictionary[Store, set[str]] = weakref.WeakKeyDictionary()

    def watch(self, store: Store) -> None:
        """Makes the gauges observe store's backlog."""
        with self._lock:
            self._stores.add(store)

    def unwatch(self, store: Store) -> None:
        """Stops the gauges observing store."""
        with self._lock:
            self._stores.discard(store)

    def enqueued(self, kind: str, queue: str, jobs: int) -> None:
        """Counts jobs of kind enqueued into queue."""
        self._enqueued.add(jobs, {"jobtable.job.kind": kind, "messaging.destination.name": queue})

    def attempted(self, kind: str, queue: str, outcome: str, seconds: float) -> None:
        """Records an attempt's duration and outcome; a final one also counts its job finished."""
        where = {"jobtable.job.kind": kind, "messaging.destination.name": queue}
        self._duration.record(seconds, {**where, "jobtable.attempt.outcome": outcome})
        if outcome in _FINAL:
            self._finished.add(1, {**where, "jobtable.job.status": outcome})

    def _backlogs(self) -> Iterable[tuple[str, int, float]]:
        """Each watched store's queues: name, ready jobs, and the oldest one's wait in seconds."""
        with self._lock:
            stores = list(self._stores)
        for store in stores:
            now = store.clock()
            try:
                backlog = store.engine.read(QueueBacklog(timestamp(now)))
            except StoreError:
                continue  # closed, or unreachable: no observation rather than a wrong one
            seen = self._seen.setdefault(store, set())
            seen.update(backlog)
            for queue in sorted(seen):
                jobs, oldest = backlog.get(queue, (0, now))
                yield queue, jobs, _age(now, oldest) if jobs else 0.0

    def _depths(self, options: metrics.CallbackOptions) -> Sequence[metrics.Observation]:
        return [
            metrics.Observation(jobs, {"messaging.destination.name": queue})
            for queue, jobs, _ in self._backlogs()
        ]

    def _ages(self, options: metrics.CallbackOptions) -> Sequence[metrics.Observation]:
        return [
            metrics.Observation(age, {"messaging.destination.name": queue})
            for queue, _, age in self._backlogs()
        ]


def _age(now: datetime.datetime, run_at: datetime.datetime) -> float:
    """Seconds from run_at to now, never below 0."""
    return max(0.0, (now - run_at).total_seconds())


_instruments: "weakref.WeakKeyDictionary[metrics.MeterProvider, Instruments]" = (
    weakref.WeakKeyDictionary()
)
_instruments_lock = threading.Lock()


def instruments_of(provider: metrics.MeterProvider, version: str) -> Instruments:
    """The instruments of provider's jobtable meter, made at the first call."""
    with _instruments_lock:
        found = _instruments.get(provider)
        if found is None:
            meter = provider.get_meter("jobtable", version, schema_url=SCHEMA_URL)
            found = _instruments[provider] = Instruments(meter)
        return found
