"""How much work each of ``make bench``'s measurements does, and the figures they give.

``Plan`` holds the counts and durations (quick or full), ``Results`` one
engine's figures by key; ``log`` prints progress to stderr. The helpers
below are what every section of ``bench._suite`` shares: sizing a run to a
duration, and noting a run whose jobs failed.
"""

import dataclasses
import sys
import time
from collections.abc import Callable

from bench import _db
from bench._jobs import Ping
from bench._stats import Figure

DEADLINE = 600.0
"""Seconds any one wait for jobs to finish may take before the benchmark gives up."""

PAYLOADS = [Ping() for _ in range(_db.BATCH)]
"""One enqueue_many call's no-op payloads."""


@dataclasses.dataclass
class Plan:
    """How much work each measurement does."""

    quick: bool
    repeat: int
    seconds: float
    """Target duration of one throughput run."""
    latency_jobs: int
    single_calls: int
    concurrent_calls: int
    """Enqueue calls of a concurrent-enqueuer figure, shared by its threads or tasks."""
    batched_jobs: int
    finished_sizes: list[int]
    memory_jobs: int
    memory_seconds: float
    idle_seconds: float
    """How long a worker process sits idle while its CPU time is measured."""
    only: tuple[str, ...] = ()
    """The SECTIONS to run; empty for all."""

    @classmethod
    def make(cls, *, quick: bool, repeat: int | None) -> "Plan":
        if quick:
            return cls(
                True, repeat or 1, 0.5, 100, 200, 640, 2_000, [0, 10_000, 100_000], 10_000, 2.0, 3.0
            )
        return cls(
            False,
            repeat or 3,
            2.0,
            300,
            1_000,
            3_200,
            10_000,
            [0, 100_000, 1_000_000],
            100_000,
            8.0,
            10.0,
        )


class Results:
    """The figures of one engine, by key."""

    def __init__(self) -> None:
        self.figures: dict[str, Figure] = {}
        self.counts: dict[str, int] = {}
        self.notes: list[str] = []
        """What went wrong in a run, printed under the table."""

    def add(self, key: str, value: float, unit: str) -> None:
        self.figures.setdefault(key, Figure([], unit)).values.append(value)

    def get(self, key: str) -> Figure | None:
        return self.figures.get(key)


def log(message: str) -> None:
    """Prints message to stderr with the time: the benchmark's progress."""
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def rounded(count: float, low: int, high: int) -> int:
    """count rounded down to whole batches, and kept within low and high."""
    return max(low, min(high, int(count) // _db.BATCH * _db.BATCH))


def calibrate(measure: Callable[[int], float], probe: int, seconds: float, high: int) -> int:
    """The count of jobs that measure (count -> seconds) handles in about seconds."""
    elapsed = measure(probe)
    return rounded(probe / max(elapsed, 1e-6) * seconds, _db.BATCH, high)


def failed(results: Results, what: str, err: Exception) -> None:
    """Records a run whose jobs failed: it gives no figure, and the table says so."""
    results.notes.append(f"A run of {what} was left out: {err}.")
    log(results.notes[-1])
