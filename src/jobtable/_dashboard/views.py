"""What the dashboard's templates show, computed from the store's records: plain data and text.

Nothing here touches the database or the request: the page handlers read
the store, then hand its records to these functions. The overview's
throughput chart is SVG geometry computed here too (``throughput_chart``).
"""

import dataclasses
import datetime
import json
import pathlib
from collections.abc import Mapping, Sequence
from urllib.parse import quote, urlencode

import jinja2

from jobtable._job import JobRecord, Status
from jobtable._labels import check_tag
from jobtable._operator.models import DeleteResult, RetryResult, ThroughputPoint
from jobtable._values import unstorable as unstorable

PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
FINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED})

NOTICES: Mapping[str, str] = {
    "cancel-cancelled": "Cancelled: no handler will run this job.",
    "cancel-requested": "Cancel requested: its runner stops the handler within about a second.",
    "cancel-finished": "The job had already finished: nothing changed.",
    f"retry-{RetryResult.RETRIED}": "Queued again, with fresh attempts.",
    f"retry-{RetryResult.QUEUED}": "The job is already queued: nothing changed.",
    f"retry-{RetryResult.RUNNING}": "The job is running: nothing changed (cancel it first).",
    f"retry-{RetryResult.SUCCEEDED}": "The job succeeded: nothing changed.",
    f"retry-{RetryResult.KEY_HELD}": "Another job holds this unique job's key: nothing changed.",
    f"retry-{RetryResult.BLOCKED}": (
        "A dependency it needs failed, was cancelled or was deleted: nothing changed."
        " Retry that dependency (named under Workflow), which brings this job back."
    ),
    "approve-sent": "Approved: the job resumes.",
    "reject-sent": "Rejected: the job resumes with the refusal.",
    f"delete-{DeleteResult.DELETED}": "The job was deleted.",
    f"delete-{DeleteResult.RUNNING}": "The job is running and was kept: cancel it first.",
    "bulk-retry": "Failed jobs queued again: {count}.",
    "bulk-retry-selected": (
        "Queued again: {count} (failed or cancelled ones no failed, cancelled or deleted"
        " dependency blocks; others unchanged)."
    ),
    "bulk-cancel": "Cancelled or asked to cancel: {count} (finished ones unchanged).",
    "bulk-delete": "Deleted: {count} (running ones are kept: cancel them first).",
    "queue-pause": "Queue paused: no runner starts its jobs until it is resumed.",
    "queue-resume": "Queue resumed: runners claim its jobs again.",
    "queue-set": "Limits set: they win over the code's until cleared.",
    "queue-clear": "The operator's limits are cleared: the code's declaration applies.",
    "workflow-cancel": "Workflow cancelled: {count} pending or queued jobs; running ones stop.",
}
"""The messages an action's redirect may show, by code: a link cannot make a page say more."""


class BadFilter(ValueError):
    """A list filter in the query string that cannot be used; its text names the parameter."""


@dataclasses.dataclass(frozen=True, slots=True)
class Filters:
    """The job list's filters and page, as parsed from the query string."""

    status: Status | None = None
    kind: str | None = None
    queue: str | None = None
    tag: str | None = None
    before: int | None = None
    limit: int = PAGE_SIZE

    def query(self, **changes: object) -> str:
        """The query string of these filters with changes, leaving out empty ones."""
        values: dict[str, object] = {
            "status": self.status,
            "kind": self.kind,
            "queue": self.queue,
            "tag": self.tag,
            "before": self.before,
            "limit": None if self.limit == PAGE_SIZE else self.limit,
        }
        values.update(changes)
        return urlencode({k: str(v) for k, v in values.items() if v is not None and v != ""})


def _text(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name, "").strip()
    if not value:
        return None
    if len(value) > 200 or unstorable(value):
        raise BadFilter(f"{name}: not a {name} name jobtable can store")
    return value


def _int(params: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise BadFilter(f"{name}: want a whole number from {low} to {high}, got {raw[:40]!r}")
    return int(raw)


def _tag(params: Mapping[str, str]) -> str | None:
    value = params.get("tag", "").strip()
    if not value:
        return None
    try:
        return check_tag("tag", value)
    except ValueError as err:
        raise BadFilter(str(err)) from None


def parse_filters(params: Mapping[str, str]) -> Filters:
    """The filters of a query string; raises BadFilter naming the parameter that is wrong."""
    raw_status = params.get("status", "").strip()
    status = None
    if raw_status:
        try:
            status = Status(raw_status)
        except ValueError:
            wanted = ", ".join(s.value for s in Status)
            raise BadFilter(f"status: want one of {wanted}, got {raw_status[:40]!r}") from None
    return Filters(
        status=status,
        kind=_text(params, "kind"),
        queue=_text(params, "queue"),
        tag=_tag(params),
        before=_int(params, "before", 1, (1 << 63) - 1),
        limit=_int(params, "limit", 1, MAX_PAGE_SIZE) or PAGE_SIZE,
    )


def choices(names: list[str], current: str | None) -> list[str]:
    """The names a pick-list offers: those seen, plus the current filter's if it has no job now."""
    if current is not None and current not in names:
        return sorted([*names, current])
    return names


def percent(rate: float | None) -> str:
    """A rate from 0 to 1 as a percentage to a tenth (``12.5%``), or a dash."""
    return "-" if rate is None else f"{rate * 100:.1f}%"


def pretty(value: object) -> str:
    """Stored JSON data as indented text (the template escapes it)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def utc(at: datetime.datetime | None) -> str:
    """A time as UTC text to the second, or a dash."""
    if at is None:
        return "-"
    return at.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def duration(span: datetime.timedelta | None) -> str:
    """A span as its two largest units (``4m 5s``), or a dash."""
    if span is None:
        return "-"
    seconds = max(0, int(span.total_seconds()))
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = [(days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")]
    shown = [f"{n}{unit}" for n, unit in parts if n][:2]
    return " ".join(shown) or "0s"


def span(value: datetime.timedelta | None) -> str:
    """A short span readably: ``340 ms``, ``4.2 s``, else as duration does; or a dash."""
    if value is None:
        return "-"
    seconds = value.total_seconds()
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return duration(value)


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """One line of a job's timeline: when, what happened, and the stored detail if any."""

    at: datetime.datetime
    what: str
    detail: str | None = None


def timeline(record: JobRecord) -> list[Event]:
    """The job's timeline from its record, oldest first.

    Each failed attempt is an event with its stored message; the record keeps
    the start of the latest attempt only, so earlier starts are not shown.
    """
    events = [
        Event(record.created_at, "enqueued", f"queue {record.queue}, priority {record.priority}")
    ]
    if record.run_at > record.created_at and record.status == Status.QUEUED:
        events.append(Event(record.run_at, "due"))
    for failed in record.errors:
        events.append(Event(failed.at, f"attempt {failed.attempt} failed", failed.error))
    if record.started_at is not None:
        on = None if record.runner is None else f"runner {record.runner}"
        events.append(Event(record.started_at, f"attempt {record.attempt} started", on))
    if record.finished_at is not None:
        events.append(Event(record.finished_at, str(record.status), record.error))
    return sorted(events, key=lambda event: event.at)


def state(record: JobRecord, alive: frozenset[str], at: datetime.datetime) -> str | None:
    """What the status alone does not say: a dead runner's hold, a cancel asked, a later run_at.

    alive names the live runners; a running job whose runner is not among
    them is held by a dead runner (another runner will fail it as
    interrupted). None when the status says it all.
    """
    if record.status == Status.RUNNING:
        if record.runner not in alive:
            return "held by a dead runner"
        if record.cancel_requested:
            return "cancel requested"
    if record.status == Status.QUEUED and record.run_at > at:
        return f"scheduled for {utc(record.run_at)}"
    return None


def final(record: JobRecord) -> bool:
    """Whether nothing will change the job by itself any more (a page may stop refreshing)."""
    return record.status in FINAL


def environment(templates: pathlib.Path) -> jinja2.Environment:
    """The templates' Jinja2 environment: autoescaping, strict, with the pages' filters."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        utc=utc,
        duration=duration,
        pretty=pretty,
        percent=percent,
        span=span,
    )
    env.filters["path"] = lambda value: quote(str(value), safe="")
    env.globals["statuses"] = list(Status)
    return env


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
