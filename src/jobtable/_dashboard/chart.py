"""The overview's throughput chart: jobs finished per minute over the last hour, as SVG geometry.

The geometry is computed here, in plain data; the template only draws the
rectangles, so the page needs no script and no charting library.
"""

import dataclasses
import datetime
from collections.abc import Sequence

from jobtable._job import Status
from jobtable._operator.models import ThroughputPoint

WIDTH = 600
HEIGHT = 120
STACK = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)
"""The finished statuses, drawn bottom up."""


@dataclasses.dataclass(frozen=True, slots=True)
class Segment:
    """One status's part of a minute's bar."""

    status: str
    y: float
    height: float
    jobs: int


@dataclasses.dataclass(frozen=True, slots=True)
class Bar:
    """One minute: its start (HH:MM UTC), its x and its segments, bottom up."""

    minute: str
    x: float
    total: int
    segments: list[Segment]


@dataclasses.dataclass(frozen=True, slots=True)
class Chart:
    """The chart: its size, the bar width, the tallest bar's count, and the bars."""

    width: int
    height: int
    bar_width: float
    peak: int
    total: int
    bars: list[Bar]


def _floor_minute(at: datetime.datetime) -> datetime.datetime:
    return at.astimezone(datetime.UTC).replace(second=0, microsecond=0)


def throughput_chart(
    points: Sequence[ThroughputPoint], now: datetime.datetime, minutes: int = 60
) -> Chart:
    """The chart of points for the minutes minutes up to now's, oldest on the left."""
    last = _floor_minute(now)
    first = last - datetime.timedelta(minutes=minutes - 1)
    per_minute: dict[datetime.datetime, dict[Status, int]] = {}
    for point in points:
        minute = _floor_minute(point.minute)
        if first <= minute <= last:
            per_minute.setdefault(minute, {})[point.status] = point.jobs
    totals = [
        sum(per_minute.get(first + datetime.timedelta(minutes=i), {}).values())
        for i in range(minutes)
    ]
    peak = max(totals, default=0)
    step = WIDTH / minutes
    bars = []
    for i in range(minutes):
        minute = first + datetime.timedelta(minutes=i)
        counts = per_minute.get(minute, {})
        base = float(HEIGHT)
        segments = []
        for status in STACK:
            jobs = counts.get(status, 0)
            if jobs and peak:
                height = jobs / peak * (HEIGHT - 4)
                base -= height
                segments.append(Segment(str(status), round(base, 2), round(height, 2), jobs))
        bars.append(Bar(minute.strftime("%H:%M"), round(i * step, 2), totals[i], segments))
    return Chart(WIDTH, HEIGHT, round(step * 0.8, 2), peak, sum(totals), bars)
