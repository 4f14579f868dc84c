"""Periodic jobs: a runner service that enqueues a kind's job at each tick of a schedule.

Every runner that declares a schedule enqueues each tick, and a unique key
holding the tick's time makes the database keep one job per tick, however
many runners on however many machines declare it: no runner leads.
"""

import dataclasses
import datetime
import hashlib
import json
from collections.abc import Collection
from typing import Any, Literal, TypeVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from typing_extensions import Unpack

from jobtable._errors import RunnerError
from jobtable._kind import Kind
from jobtable._options import PeriodicOptions
from jobtable._runner.shared import Shared
from jobtable._unique import ALL_STATUSES, EnqueueResult, Unique
from jobtable._values import timestamp

P = TypeVar("P")
R = TypeVar("R")

Missed = Literal["once", "skip"]
"""What a runner does at start with the latest tick it finds already past (see ``add``)."""

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# The longest sleep between looks at the clock, so a clock that jumps (a
# suspended machine, a clock set by hand, a test's FrozenClock moved on) is
# noticed within it. A look costs a clock read and a comparison, no query.
_MAX_SLEEP = 1.0
# The wait before trying again an enqueue that failed (the database was unreachable).
_RETRY_AFTER = 1.0
_TINY = datetime.timedelta(microseconds=1)


@dataclasses.dataclass(frozen=True, slots=True)
class _Every:
    """Ticks every period, counted from 1970-01-01 UTC so that every runner agrees."""

    period: datetime.timedelta

    def latest(self, now: datetime.datetime) -> datetime.datetime:
        return _EPOCH + (now - _EPOCH) // self.period * self.period

    def following(self, tick: datetime.datetime) -> datetime.datetime:
        return tick + self.period


@dataclasses.dataclass(frozen=True, slots=True)
class _Cron:
    """Ticks of a cron expression in a time zone, as cronsim computes them.

    On a spring-forward day a time that does not exist runs at the first
    moment after the gap; on a fall-back day a time that occurs twice runs
    once, at its first occurrence, while an hourly or finer schedule runs in
    each real hour: each tick is an instant, kept as UTC.
    """

    expression: str
    zone: ZoneInfo

    def latest(self, now: datetime.datetime) -> datetime.datetime:
        import cronsim

        local = (now + _TINY).astimezone(self.zone)
        return next(cronsim.CronSim(self.expression, local, reverse=True)).astimezone(datetime.UTC)

    def following(self, tick: datetime.datetime) -> datetime.datetime:
        import cronsim

        local = tick.astimezone(self.zone)
        return next(cronsim.CronSim(self.expression, local)).astimezone(datetime.UTC)


@dataclasses.dataclass(slots=True)
class _Schedule:
    """One declared schedule, and the latest tick this runner enqueued or passed over."""

    kind: Kind[Any, Any]
    payload: object
    name: str
    ticks: _Every | _Cron
    missed: Missed
    options: PeriodicOptions
    last: datetime.datetime | None = None

    def unique(self, tick: datetime.datetime) -> Unique:
        # Every status: a tick's job keeps its key until pruned, so a runner
        # that comes later never enqueues the same tick again.
        return Unique(key=f"periodic:{self.name}:{timestamp(tick)}", statuses=ALL_STATUSES)


# The nicknames of Vixie and Debian cron (and croniter), which cronsim does not read.
_NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def _ticks(where: str, cron: str | None, every: object, timezone: str) -> _Every | _Cron:
    if (cron is None) == (every is None):
        raise ValueError(f"{where}: give cron or every, exactly one")
    # Checked for every too: a mistyped zone beside every is a mistake all the same.
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError, TypeError) as err:
        raise ValueError(f"{where}: unknown timezone {timezone!r}") from err
    if every is not None:
        if not isinstance(every, datetime.timedelta) or every <= datetime.timedelta(0):
            raise ValueError(f"{where}: every must be a positive timedelta, got {every!r}")
        return _Every(every)
    try:
        import cronsim
    except ImportError as err:  # pragma: no cover - the dev extra installs it
        raise RunnerError(
            f"{where}: cron needs the cronsim package: pip install 'jobtable[cron]'"
        ) from err
    if not isinstance(cron, str):
        raise ValueError(f"{where}: cron must be a str, got {cron!r}")
    cron = _NICKNAMES.get(cron.strip().lower(), cron)
    try:
        cronsim.CronSim(cron, datetime.datetime.now(zone))
    except cronsim.CronSimError as err:
        raise ValueError(f"{where}: bad cron expression {cron!r}: {err}") from err
    return _Cron(cron, zone)


class PeriodicScheduler:
    """The runner's service that enqueues the jobs of its declared schedules at their ticks."""

    def __init__(self, shared: Shared) -> None:
        self._store = shared.store
        self._logger = shared.logger
        self._retention = shared.settings.retention
        self._stop = shared.stop
        self._schedules: dict[str, _Schedule] = {}
        self._started = False

    def add(
        self,
        kind: Kind[P, R],
        *,
        payload: P,
        cron: str | None = None,
        every: datetime.timedelta | None = None,
        timezone: str = "UTC",
        name: str | None = None,
        missed: Missed = "once",
        **options: Unpack[PeriodicOptions],
    ) -> None:
        """Enqueues a job of kind with payload at each tick of a schedule, from start to stop.

        The schedule is ``cron`` (five fields, ``"0 7 * * 1-5"``, or a
        nickname, ``"@daily"``, ``"@hourly"``..., read in ``timezone``, an
        IANA name, which must exist for every too; DST as ``cronsim`` does it: a time the
        spring-forward gap skips runs just after it, a time the fall-back
        repeats runs once) or ``every`` (a timedelta; ticks are counted from
        1970-01-01 UTC, so ``every=timedelta(hours=1)`` ticks on the hour).
        Each tick is enqueued exactly once however many runners declare the
        same schedule: its job's unique key holds the schedule's ``name`` and
        the tick's time, covers every status, and so lasts until the job is
        pruned. The name defaults to a digest of the schedule and payload;
        give one to keep a schedule's identity when you change either.

        ``missed`` says what a starting runner does with the latest tick that
        is already past: ``"once"`` (the default) enqueues it, once however
        many ticks the downtime missed (a duplicate when another runner
        enqueued it, so a restart adds nothing); ``"skip"`` waits for the next
        tick. A tick older than the runner's retention is never caught up, as
        its job may have been pruned. options are every job's
        (``PeriodicOptions``: an enqueue's but its time, its uniqueness and
        conn), applied with the kind's declarations at each tick and checked
        here. Raises ValueError for a bad schedule, TypeError or ValueError
        naming a bad option, PayloadError for a payload that is not a P, and
        RunnerError after start.
        """
        where = f"periodic {kind.name!r}" if isinstance(kind, Kind) else "periodic"
        if not isinstance(kind, Kind):
            raise TypeError(f"{where}: want a jobtable.Kind, got {type(kind).__name__}")
        if self._started:
            raise RunnerError(
                f"{where}: declare schedules before start (and before the first drain)"
            )
        if missed not in ("once", "skip"):
            raise ValueError(f"{where}: missed must be 'once' or 'skip', got {missed!r}")
        ticks = _ticks(where, cron, every, timezone)
        store = self._store
        kind._codec.encode_payload(payload, store.max_payload_bytes, store.secret_keys)
        kind.check_options(where, options, PeriodicOptions.__optional_keys__)
        if name is None:
            # Masked: a secret's ciphertext differs at each encoding, and the
            # name must not.
            encoded = kind._codec.shown_payload(payload)
            identity = [cron, None if every is None else every.total_seconds(), timezone, encoded]
            name = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]
        elif not isinstance(name, str) or not name:
            raise ValueError(f"{where}: name must be a non-empty str, got {name!r}")
        key = f"{kind.name}\x00{name}"
        if key in self._schedules:
            raise ValueError(f"{where}: a schedule named {name!r} is already declared")
        self._schedules[key] = _Schedule(kind, payload, name, ticks, missed, options)

    def begin(self, handled: Collection[str] = (), queues: Collection[str] = ()) -> None:
        """Closes the declarations and notes, per schedule, the ticks already past to skip.

        Logs a warning for each schedule whose kind has no handler among
        handled while its queue is one of queues: this runner would fail
        every tick with "no handler for job kind".
        """
        self._started = True
        now = self._store.clock()
        for schedule in self._schedules.values():
            kind = schedule.kind
            if kind.name not in handled and kind.options.queue in queues:
                self._logger.warning(
                    "periodic kind has no handler on this runner, which runs its queue: "
                    "each tick it claims fails with 'no handler for job kind'",
                    extra={"kind": kind.name, "queue": kind.options.queue},
                )
            latest = schedule.ticks.latest(now)
            too_old = self._retention is not None and now - latest > self._retention
            if schedule.missed == "skip" or too_old:
                schedule.last = latest

    async def enqueue_due(self) -> list[EnqueueResult]:
        """Enqueues, per schedule, its latest tick not later than now if it is new to this runner.

        Ticks between it and the one before are not enqueued: however long
        the wait was, one job. Returns what each enqueue stored. An enqueue
        that fails is logged and tried again at the next call.
        """
        now = self._store.clock()
        results = []
        for schedule in self._schedules.values():
            tick = schedule.ticks.latest(now)
            if schedule.last is not None and tick <= schedule.last:
                continue
            try:
                result = await schedule.kind.aenqueue_result(
                    self._store,
                    schedule.payload,
                    run_at=tick,
                    unique=schedule.unique(tick),
                    **schedule.options,
                )
            except Exception:
                self._logger.exception(
                    "periodic enqueue failed; trying again",
                    extra={"kind": schedule.kind.name, "tick": timestamp(tick)},
                )
                continue
            schedule.last = tick
            results.append(result)
        return results

    async def enqueue_inline(self) -> list[EnqueueResult]:
        """Enqueues each schedule's due tick as a runner starting now would; for ``drain``.

        The first call begins (closes the declarations, applies ``missed``),
        as start does; each later one enqueues the ticks due since, by the
        store's clock. Returns what each enqueue stored.
        """
        if not self._schedules:
            return []
        if not self._started:
            self.begin()
        return await self.enqueue_due()

    def next_tick(self) -> datetime.datetime | None:
        """The earliest tick, over the schedules, after the last one each enqueued."""
        now = self._store.clock()
        ticks = [s.ticks.following(s.last or s.ticks.latest(now)) for s in self._schedules.values()]
        return min(ticks, default=None)

    async def run(self) -> None:
        """Enqueues each due tick until the runner stops; begin must have been called."""
        while self._schedules and not self._stop.is_set():
            await self.enqueue_due()
            now = self._store.clock()
            upcoming = self.next_tick()
            if upcoming is None or any(
                s.last is None or s.last < s.ticks.latest(now) for s in self._schedules.values()
            ):
                delay = _RETRY_AFTER  # an enqueue failed: try it again soon
            else:
                delay = (upcoming - now).total_seconds()
            await self._stop.wait(min(max(delay, 0.0), _MAX_SLEEP))
