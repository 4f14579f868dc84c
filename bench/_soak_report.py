"""The soak's per-minute table and its goal checks.

A ``Minute`` is what one minute of the soak measured: its rates and
latencies, and what the engine's probe read at its end (``bench._soak_probe``).
``header`` and ``row`` print them as a Markdown table, one line per minute;
``goal_checks`` judges the whole run.
"""

import dataclasses
import math
from typing import Any

from bench._stats import percentile

TOLERANCE = 0.10
"""How far minute N's throughput may be from minute 2's, how much higher its p99
may be (a lower one is no fault), and how much a size may still grow over the
last half of the pruned stretch."""


@dataclasses.dataclass
class Minute:
    """One minute of the soak."""

    minute: int
    enqueued: float
    """Jobs enqueued per second."""
    done: float
    """Jobs whose handler returned, per second."""
    latencies: list[float]
    """Enqueue-to-start of the jobs started in the minute, milliseconds."""
    probe: dict[str, Any]
    wal_max_mib: float = 0.0
    """The largest -wal file seen in the minute, sampled every second (SQLite)."""
    wal_frames: int = 0
    """The most frames the WAL held at once in the minute, sampled every second (SQLite)."""
    hot_pct: float | None = None
    """HOT updates in percent of the minute's updates (PostgreSQL)."""
    wal_restarts: int | None = None
    """How many times the WAL restarted from its beginning in the minute (SQLite)."""

    def p(self, q: float) -> float:
        """The q-th percentile of the minute's latencies, NaN when none started."""
        return percentile(self.latencies, q) if self.latencies else math.nan


_COMMON = ("min", "enq/s", "done/s", "p50 ms", "p99 ms", "backlog")
_PG = ("total MiB", "heap MiB", "index MiB", "live", "dead", "autovac", "HOT %")
_SQLITE = ("db MiB", "pages", "freelist", "-wal max MiB", "WAL frames max", "WAL restarts")


def header(engine: str) -> str:
    """The table's header and rule lines."""
    names = _COMMON + (_PG if engine == "postgres" else _SQLITE)
    return "| " + " | ".join(names) + " |\n|" + "---:|" * len(names)


def row(engine: str, m: Minute) -> str:
    """One minute's line of the table."""
    pr = m.probe
    cells = [
        str(m.minute),
        f"{m.enqueued:.0f}",
        f"{m.done:.0f}",
        f"{m.p(50):.1f}",
        f"{m.p(99):.1f}",
        str(pr["backlog"]),
    ]
    if engine == "postgres":
        hot = "-" if m.hot_pct is None else f"{m.hot_pct:.1f}"
        cells += [
            f"{pr['total_mib']:.1f}",
            f"{pr['heap_mib']:.1f}",
            f"{pr['index_mib']:.1f}",
            str(pr["live"]),
            str(pr["dead"]),
            str(pr["autovacuum"]),
            hot,
        ]
    else:
        restarts = "-" if m.wal_restarts is None else str(m.wal_restarts)
        cells += [
            f"{pr['db_mib']:.1f}",
            str(pr["pages"]),
            str(pr["freelist"]),
            f"{m.wal_max_mib:.1f}",
            str(m.wal_frames),
            restarts,
        ]
    return "| " + " | ".join(cells) + " |"


def _within(value: float, base: float, *, lower_is_fine: bool = False) -> str:
    if base == 0 or math.isnan(value) or math.isnan(base):
        return "cannot judge (no base)"
    ratio = value / base
    fine = ratio <= 1 + TOLERANCE if lower_is_fine else abs(ratio - 1) <= TOLERANCE
    return f"{ratio:.2f}x of minute 2: {'ok' if fine else 'MISSED'}"


def _size(engine: str, m: Minute) -> float:
    return float(m.probe["total_mib"] if engine == "postgres" else m.probe["db_mib"])


def _levels_off(engine: str, minutes: list[Minute], retention: float | None) -> str:
    if retention is None or retention / 60 + 2 >= len(minutes):
        return "not judged: no pruning within the run (retention longer than it)"
    settled = math.ceil(retention / 60) + 2
    tail = minutes[settled - 1 :]
    if len(tail) < 3:
        return "not judged: too few minutes after pruning began"
    mid, last = tail[len(tail) // 2], tail[-1]
    growth = _size(engine, last) / _size(engine, mid) - 1
    verdict = "ok" if growth <= TOLERANCE else "MISSED"
    return (
        f"{_size(engine, mid):.1f} MiB at minute {mid.minute}, "
        f"{_size(engine, last):.1f} MiB at minute {last.minute} "
        f"({growth:+.0%}): {verdict}"
    )


def _wal_bounded(minutes: list[Minute]) -> str:
    half = len(minutes) // 2
    first = max((m.wal_max_mib for m in minutes[:half]), default=0.0)
    second = max((m.wal_max_mib for m in minutes[half:]), default=0.0)
    verdict = "ok" if second <= max(first * (1 + TOLERANCE), 1.0) else "MISSED"
    return f"largest -wal {first:.1f} MiB in the first half, {second:.1f} MiB after: {verdict}"


def goal_checks(engine: str, minutes: list[Minute], retention: float | None) -> list[str]:
    """The run's goal checks, one line each, ending in ok, MISSED or why it was not judged."""
    if len(minutes) < 3:
        return ["not judged: fewer than 3 minutes"]
    two, last = minutes[1], minutes[-1]
    lines = [
        f"throughput, minute {last.minute} against minute 2: {_within(last.done, two.done)}",
        f"p99, minute {last.minute} against minute 2: "
        + _within(last.p(99), two.p(99), lower_is_fine=True),
        f"sizes level off once pruning runs: {_levels_off(engine, minutes, retention)}",
    ]
    if engine == "sqlite":
        lines.append(f"WAL bounded: {_wal_bounded(minutes)}")
    return lines
