"""The tables ``make bench`` prints for one engine: each figure beside its raw limit; the targets.

``engine_table`` adds its rows group by group, in the order the sections run
(raw limits, end to end, enqueue, uniqueness, latency, loop lag, memory,
finished rows, flow, wake-up); most rows are jobtable's figure, the raw limit it is measured
against, their ratio and a note. ``targets_table`` holds each per-job cost
target against what it is a ratio to, in the same run.
"""

from collections.abc import Callable

from bench import _batch, _flow, _hop, _signals, _sleepers, _uniqueness, _wait, _wakeup
from bench._enqueue import CONCURRENT
from bench._plan import Plan, Results
from bench._processes import PROCESSES
from bench._stats import Figure, Table, cell, fmt, ratio

Get = Callable[[str], Figure | None]
"""A figure by key, or None when it was not measured (Results.get)."""

WORKERS = (1, 4, 16)
"""The worker counts of the raw cycles and of the end-to-end runs."""


def _size(count: int) -> str:
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    if count >= 1000 and count % 1000 == 0:
        return f"{count // 1000}k"
    return str(count)


def _plural(count: int, word: str, ending: str = "s") -> str:
    return word + (ending if count > 1 else "")


def _engine_name(engine: str) -> str:
    return "SQLite" if engine == "sqlite" else "PostgreSQL"


def _cost_vs(empty: Figure | None, now: Figure | None) -> str:
    """How much more a job costs than on the empty table: empty rate / this rate."""
    if empty is None or now is None or not now.median:
        return "-"
    return f"{empty.median / now.median:.2f}x"


def _factor(ours: Figure | None, base: Figure | None) -> str:
    """ours / base of the medians as a factor, or '-'."""
    if ours is None or base is None or not ours.values or not base.values or not base.median:
        return "-"
    return f"{ours.median / base.median:.2f}x"


def _vs(table: Table, label: str, ours: Figure | None, raw: Figure | None, note: str) -> None:
    """A row of jobtable's figure beside the raw limit it is measured against, and their ratio."""
    table.add(label, cell(ours), cell(raw), ratio(ours, raw), note)


def _alone(table: Table, label: str, ours: Figure | None, note: str) -> None:
    """A row of jobtable's figure that has no raw limit."""
    table.add(label, cell(ours), "-", "-", note)


def _raw_rows(table: Table, engine: str, g: Get) -> None:
    """The raw limits: job lives, then the claim-and-finish cycles."""
    batch = "1 claim of 100; the raw limit below" + (", pipelined" if engine == "postgres" else "")
    lives = [
        ("raw: job life, 1 transaction per statement", "raw.step", "3 commits a job"),
        ("raw: job life, 1 transaction per job", "raw.life", ""),
        ("raw: job life, 100 jobs per transaction", "raw.batch", batch),
    ]
    if g("raw.batch4") is not None:
        lives.append(("raw: job life, 100 per transaction, 4 connections", "raw.batch4", ""))
    for w in WORKERS:
        label = f"raw: claim and finish, {w} {_plural(w, 'job')} per commit"
        lives.append((label, f"raw.cycle{w}", f"the most {w} {_plural(w, 'worker')} can batch"))
    for label, key, note in lives:
        table.add(label, "-", cell(g(key)), "-", note)


def _end_to_end_rows(table: Table, engine: str, r: Results) -> None:
    """End to end in this process and in worker processes, against the batched raw job life."""
    g = r.get
    runs = [
        (
            f"e2e.{w}",
            f"{w} {_plural(w, 'worker')}",
            f"; {ratio(g(f'e2e.{w}'), g(f'raw.cycle{w}'))} of raw claim and finish",
        )
        for w in WORKERS
    ]
    runs += [
        (
            f"proc.{p}",
            f"{p} {_plural(p, 'process', 'es')} x 4 workers",
            f"; {_factor(g(f'proc.{p}'), g('proc.1'))} one process" if p > 1 else "",
        )
        for p in PROCESSES[engine]
    ]
    for key, who, more in runs:
        label = f"end to end, {who} ({_size(r.counts.get(key, 0))} jobs)"
        of_step = f"{ratio(g(key), g('raw.step'))} of raw per step"
        _vs(table, label, g(key), g("raw.batch"), of_step + more)


def _enqueue_rows(table: Table, g: Get) -> None:
    """One caller's enqueue and enqueue_many against raw inserts, then the concurrent callers."""
    single = g("enq.single")
    _vs(table, "enqueue, 1 job a call", single, g("raw.insert1"), "raw: 1 insert a transaction")
    many, raw_many = g("enq.many"), g("raw.insert100")
    _vs(table, "enqueue_many, 100 jobs a call", many, raw_many, "raw: 100 inserts a transaction")
    for key, label in CONCURRENT:
        note = f"{_factor(g(key), single)} one caller"
        _alone(table, f"enqueue, 1 job a call, {label}", g(key), note)


_WAKE = {"sqlite": "worker woken by inotify on the WAL", "postgres": "LISTEN/NOTIFY"}
"""How a worker in another process learns of a new job, by engine."""


def _latency_rows(table: Table, engine: str, plan: Plan, g: Get) -> None:
    """Enqueue-to-start latencies, the idle worker process's CPU, and scheduled jobs' lateness."""
    ways = (
        ("in", "in-process", ""),
        ("cross", "from another process", _WAKE[engine]),
        ("poll", "from another process, polling only", "worker polls every 1 s (watch=False)"),
    )
    for where, label, note in ways:
        for q in ("p50", "p99"):
            key = f"lat.{where}.{q}"
            if g(key) is None:
                continue
            raw_note = "raw: insert commit + claim commit" + (f"; {note}" if note else "")
            _vs(table, f"enqueue-to-start {q}, {label}", g(key), g(f"lat.raw.{q}"), raw_note)
    idle = f"CPU time over {plan.idle_seconds:.0f} s with no job, 4 workers, poll every 1 s"
    for where, label in (("cross", ""), ("poll", ", polling only")):
        if g(f"idle.{where}") is not None:
            _alone(table, f"CPU of an idle worker process{label}", g(f"idle.{where}"), idle)
    late = "from run_at to the handler's start; the runner polls every 1 s"
    for q in ("p50", "p99"):
        _alone(table, f"scheduled-start lateness {q}, in-process", g(f"lat.sched.{q}"), late)


def _lag_rows(table: Table, g: Get) -> None:
    """The event loop's lag under load, beside the same probe on an idle loop (no ratio)."""
    for w in WORKERS:
        for q in ("p50", "p99", "max"):
            label = f"event-loop lag {q}, {w} {_plural(w, 'worker')} under load"
            idle = cell(g(f"lag.idle.{q}"))
            table.add(
                label, cell(g(f"lag.w{w}.{q}")), idle, "-", "raw: the same probe on an idle loop"
            )


def _memory_rows(table: Table, plan: Plan, g: Get) -> None:
    """Peak RSS of a worker process at each stage, beside the raw SQL process's."""
    jobs = _size(plan.memory_jobs)
    ran, raw_ran = g("mem.ran"), g("mem.raw.ran")
    ran_note = (
        f"ran {fmt(ran.median, 'jobs')} in {plan.memory_seconds:.0f} s "
        f"(raw {fmt(raw_ran.median, 'jobs')})"
        if ran and raw_ran
        else ""
    )
    stages = (
        ("opened", "peak RSS, store open", ""),
        ("enqueued", f"peak RSS, {jobs} jobs enqueued", ""),
        ("running", f"peak RSS, running with {jobs} queued", ran_note),
    )
    for stage, label, note in stages:
        _vs(table, label, g(f"mem.{stage}"), g(f"mem.raw.{stage}"), note)


_FINISHED_ROWS = (
    ("enq.single", "raw.insert1", "enqueue, 1 a call"),
    ("enq.many", "raw.insert100", "enqueue_many, 100 a call"),
    ("claim.single", "raw.claim1", "claim, 1 a call"),
    (None, "raw.claim100", "claim, 100 claims a transaction"),
    ("e2e.4", "raw.batch", "end to end, 4 workers"),
)
"""The figures measured again beside finished rows: jobtable's key (or None), raw key, label."""


def _finished_rows(table: Table, plan: Plan, g: Get) -> None:
    """Each figure at each size of finished rows, with its cost against the empty table."""
    first = f"rows{plan.finished_sizes[0]}"
    for size in plan.finished_sizes:
        at = f"rows{size}"
        for ours, raw, label in _FINISHED_ROWS:
            mine = g(f"{at}.{ours}") if ours else None
            theirs = g(f"{at}.{raw}")
            cost = f"raw {_cost_vs(g(f'{first}.{raw}'), theirs)}"
            if ours:
                cost = f"jobtable {_cost_vs(g(f'{first}.{ours}'), mine)}, {cost}"
            _vs(
                table,
                f"{label}, {_size(size)} finished rows",
                mine,
                theirs,
                f"cost vs empty: {cost}",
            )


def engine_table(engine: str, version: str, plan: Plan, r: Results) -> Table:
    """The one table of an engine's figures."""
    table = Table(
        f"{_engine_name(engine)} {version} (durable), "
        f"median of {plan.repeat} run(s) (± half the range)",
        ["figure", "jobtable", "raw limit", "jobtable / raw", "note"],
    )
    g = r.get
    _raw_rows(table, engine, g)
    _end_to_end_rows(table, engine, r)
    _enqueue_rows(table, g)
    _uniqueness.add_rows(table, g)
    _latency_rows(table, engine, plan, g)
    _wait.add_rows(table, engine, g)
    _lag_rows(table, g)
    _memory_rows(table, plan, g)
    _finished_rows(table, plan, g)
    _flow.add_rows(table, g)
    _wakeup.add_rows(table, g)
    _sleepers.add_rows(table, g)
    _signals.add_rows(table, engine, g)
    _batch.add_rows(table, g)
    return table


def _of(ours: Figure | None, base: Figure | None) -> float | None:
    if ours is None or base is None or not ours.values or not base.values or not base.median:
        return None
    return ours.median / base.median


def _verdict(value: float | None, want: float) -> str:
    if value is None:
        return "not measured"
    return "yes" if value >= want else "no"


def targets_table(engine: str, r: Results) -> Table:
    """Issue 18's targets: each figure as a ratio to what it is measured against, in this run."""
    table = Table(
        f"{_engine_name(engine)}: per-job cost targets", ["target", "figure", "ratio", "met?"]
    )
    g = r.get
    rows: list[tuple[str, Figure | None, Figure | None, float, str]] = [
        (
            "enqueue, 1 a call, >= 90% of a raw one-insert transaction",
            g("enq.single"),
            g("raw.insert1"),
            0.9,
            "%",
        ),
        (
            "1 worker, >= 80% of the raw claim-and-finish cycle of 1 job a commit",
            g("e2e.1"),
            g("raw.cycle1"),
            0.8,
            "%",
        ),
        (
            "4 workers, >= 80% of the raw claim-and-finish cycle of 4 jobs a commit",
            g("e2e.4"),
            g("raw.cycle4"),
            0.8,
            "%",
        ),
    ]
    for key, label in CONCURRENT:
        rows.append((f"enqueue from {label}, >= 3x one caller", g(key), g("enq.single"), 3.0, "x"))
    for label, ours, base in _flow.targets(g):
        rows.append((label, ours, base, _flow.TARGET, "%"))
    for label, ours, base, want, unit in rows:
        value = _of(ours, base)
        shown = (
            "-" if value is None else (f"{value * 100:.0f}%" if unit == "%" else f"{value:.2f}x")
        )
        table.add(label, f"{cell(ours)} / {cell(base)}", shown, _verdict(value, want))
    for label, figure, most in _wakeup.targets(g):
        met = "not measured"
        if figure is not None and figure.values:
            met = "yes" if figure.median <= most else "no"
        table.add(label, cell(figure), "-", met)
    hop = g("hop.thread")
    if engine == "sqlite" and hop is not None and hop.values:
        table.notes.append(_hop_note(hop.median, g("raw.cycle1"), g("raw.cycle4")))
    return table


def _hop_note(hop_us: float, cycle1: Figure | None, cycle4: Figure | None) -> str:
    """What one loop-thread-loop round trip a commit leaves of the raw cycles, at most."""
    ceilings = [
        f"{_hop.ceiling(cycle.median, jobs, hop_us) * 100:.0f}% ({jobs} a commit)"
        for cycle, jobs in ((cycle1, 1), (cycle4, 4))
        if cycle is not None and cycle.values
    ]
    return (
        f"an event loop -> thread -> event loop round trip took {hop_us:.0f} µs in this run"
        " (bench._hop); a runner whose claims cross to the writer thread once a commit,"
        " with the raw cycle's SQL and no Python of its own, could reach at most "
        + ", ".join(ceilings)
        + " of the raw cycle"
    )
