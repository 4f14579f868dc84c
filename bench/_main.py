"""The command line: which engines, how much work, and the tables it prints."""

import argparse
import dataclasses
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bench import _db, _hop, _uniqueness
from bench._stats import Figure, Table, cell, fmt, machine_details, ratio
from bench._suite import (
    CONCURRENT_TASKS,
    CONCURRENT_THREADS,
    SECTIONS,
    Plan,
    Results,
    log,
    run_engine,
)


def _size(count: int) -> str:
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    if count >= 1000 and count % 1000 == 0:
        return f"{count // 1000}k"
    return str(count)


def _cost_vs(empty: Figure | None, now: Figure | None) -> str:
    """How much more a job costs than on the empty table: empty rate / this rate."""
    if empty is None or now is None or not now.median:
        return "-"
    return f"{empty.median / now.median:.2f}x"


_CONCURRENT = [
    *((f"enq.threads{n}", f"{n} threads at once") for n in CONCURRENT_THREADS),
    (f"enq.tasks{CONCURRENT_TASKS}", f"{CONCURRENT_TASKS} async tasks at once"),
]
"""The concurrent-enqueuer figures: key and label."""


def _factor(ours: Figure | None, base: Figure | None) -> str:
    """ours / base of the medians as a factor, or '-'."""
    if ours is None or base is None or not ours.values or not base.values or not base.median:
        return "-"
    return f"{ours.median / base.median:.2f}x"


def _verdict(value: float | None, want: float) -> str:
    if value is None:
        return "not measured"
    return "yes" if value >= want else "no"


def _of(ours: Figure | None, base: Figure | None) -> float | None:
    if ours is None or base is None or not ours.values or not base.values or not base.median:
        return None
    return ours.median / base.median


def targets_table(engine: str, r: Results) -> Table:
    """Issue 18's targets: each figure as a ratio to what it is measured against, in this run."""
    name = "SQLite" if engine == "sqlite" else "PostgreSQL"
    table = Table(f"{name}: per-job cost targets", ["target", "figure", "ratio", "met?"])
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
    for key, label in _CONCURRENT:
        rows.append((f"enqueue from {label}, >= 3x one caller", g(key), g("enq.single"), 3.0, "x"))
    for label, ours, base, want, unit in rows:
        value = _of(ours, base)
        shown = (
            "-" if value is None else (f"{value * 100:.0f}%" if unit == "%" else f"{value:.2f}x")
        )
        table.add(label, f"{cell(ours)} / {cell(base)}", shown, _verdict(value, want))
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


def engine_table(engine: str, version: str, plan: Plan, r: Results) -> Table:
    """The one table of an engine's figures."""
    name = "SQLite" if engine == "sqlite" else "PostgreSQL"
    table = Table(
        f"{name} {version} (durable), median of {plan.repeat} run(s) (± half the range)",
        ["figure", "jobtable", "raw limit", "jobtable / raw", "note"],
    )
    g = r.get
    raw_batch = g("raw.batch")
    raw_step = g("raw.step")
    raw_batch_note = "1 claim of 100; the raw limit below" + (
        ", pipelined" if engine == "postgres" else ""
    )

    def of_step(key: str) -> str:
        return f"{ratio(g(key), raw_step)} of raw per step"

    table.add(
        "raw: job life, 1 transaction per statement", "-", cell(raw_step), "-", "3 commits a job"
    )
    table.add("raw: job life, 1 transaction per job", "-", cell(g("raw.life")), "-", "")
    table.add("raw: job life, 100 jobs per transaction", "-", cell(raw_batch), "-", raw_batch_note)
    if g("raw.batch4") is not None:
        table.add(
            "raw: job life, 100 per transaction, 4 connections", "-", cell(g("raw.batch4")), "-", ""
        )
    for workers in (1, 4, 16):
        table.add(
            f"raw: claim and finish, {workers} job{'s' if workers > 1 else ''} per commit",
            "-",
            cell(g(f"raw.cycle{workers}")),
            "-",
            f"the most {workers} worker{'s' if workers > 1 else ''} can batch",
        )
    for workers in (1, 4, 16):
        key = f"e2e.{workers}"
        table.add(
            f"end to end, {workers} worker{'s' if workers > 1 else ''}"
            f" ({_size(r.counts.get(key, 0))} jobs)",
            cell(g(key)),
            cell(raw_batch),
            ratio(g(key), raw_batch),
            f"{of_step(key)}; {ratio(g(key), g(f'raw.cycle{workers}'))} of raw claim and finish",
        )
    for procs in (1, 3):
        key = f"proc.{procs}"
        table.add(
            f"end to end, {procs} process{'es' if procs > 1 else ''} x 4 workers"
            f" ({_size(r.counts.get(key, 0))} jobs)",
            cell(g(key)),
            cell(raw_batch),
            ratio(g(key), raw_batch),
            of_step(key),
        )
    table.add(
        "enqueue, 1 job a call",
        cell(g("enq.single")),
        cell(g("raw.insert1")),
        ratio(g("enq.single"), g("raw.insert1")),
        "raw: 1 insert a transaction",
    )
    table.add(
        "enqueue_many, 100 jobs a call",
        cell(g("enq.many")),
        cell(g("raw.insert100")),
        ratio(g("enq.many"), g("raw.insert100")),
        "raw: 100 inserts a transaction",
    )
    single = g("enq.single")
    for key, label in _CONCURRENT:
        table.add(
            f"enqueue, 1 job a call, {label}",
            cell(g(key)),
            "-",
            "-",
            f"{_factor(g(key), single)} one caller",
        )
    _uniqueness.add_rows(table, g)
    cross_note = {"sqlite": "worker woken by inotify on the WAL", "postgres": "LISTEN/NOTIFY"}
    for where, label, note in (
        ("in", "in-process", ""),
        ("cross", "from another process", cross_note[engine]),
        ("poll", "from another process, polling only", "worker polls every 1 s (watch=False)"),
    ):
        for q in ("p50", "p99"):
            key = f"lat.{where}.{q}"
            if g(key) is None:
                continue
            table.add(
                f"enqueue-to-start {q}, {label}",
                cell(g(key)),
                cell(g(f"lat.raw.{q}")),
                ratio(g(key), g(f"lat.raw.{q}")),
                "raw: insert commit + claim commit" + (f"; {note}" if note else ""),
            )
    for where, label in (("cross", ""), ("poll", ", polling only")):
        if g(f"idle.{where}") is not None:
            table.add(
                f"CPU of an idle worker process{label}",
                cell(g(f"idle.{where}")),
                "-",
                "-",
                f"CPU time over {plan.idle_seconds:.0f} s with no job, 4 workers, poll every 1 s",
            )
    for q in ("p50", "p99"):
        table.add(
            f"scheduled-start lateness {q}, in-process",
            cell(g(f"lat.sched.{q}")),
            "-",
            "-",
            "from run_at to the handler's start; the runner polls every 1 s",
        )
    for workers in (1, 4, 16):
        for q in ("p50", "p99", "max"):
            key = f"lag.w{workers}.{q}"
            table.add(
                f"event-loop lag {q}, {workers} worker{'s' if workers > 1 else ''} under load",
                cell(g(key)),
                cell(g(f"lag.idle.{q}")),
                "-",
                "raw: the same probe on an idle loop",
            )
    mem_jobs = _size(plan.memory_jobs)
    ran, raw_ran = g("mem.ran"), g("mem.raw.ran")
    for stage, label in (
        ("opened", "peak RSS, store open"),
        ("enqueued", f"peak RSS, {mem_jobs} jobs enqueued"),
        ("running", f"peak RSS, running with {mem_jobs} queued"),
    ):
        table.add(
            label,
            cell(g(f"mem.{stage}")),
            cell(g(f"mem.raw.{stage}")),
            ratio(g(f"mem.{stage}"), g(f"mem.raw.{stage}")),
            (
                f"ran {fmt(ran.median, 'jobs')} in {plan.memory_seconds:.0f} s "
                f"(raw {fmt(raw_ran.median, 'jobs')})"
                if stage == "running" and ran and raw_ran
                else ""
            ),
        )
    rows = [
        ("enq.single", "raw.insert1", "enqueue, 1 a call"),
        ("enq.many", "raw.insert100", "enqueue_many, 100 a call"),
        ("claim.single", "raw.claim1", "claim, 1 a call"),
        (None, "raw.claim100", "claim, 100 claims a transaction"),
        ("e2e.4", "raw.batch", "end to end, 4 workers"),
    ]
    first = f"rows{plan.finished_sizes[0]}"
    for size in plan.finished_sizes:
        at = f"rows{size}"
        for ours, raw, label in rows:
            mine = g(f"{at}.{ours}") if ours else None
            theirs = g(f"{at}.{raw}")
            note = f"cost vs empty: raw {_cost_vs(g(f'{first}.{raw}'), theirs)}"
            if ours:
                note = (
                    f"cost vs empty: jobtable {_cost_vs(g(f'{first}.{ours}'), mine)}, "
                    + note[len("cost vs empty: ") :]
                )
            table.add(
                f"{label}, {_size(size)} finished rows",
                cell(mine),
                cell(theirs),
                ratio(mine, theirs),
                note,
            )
    return table


def _revision() -> str:
    """The git commit of the code measured, and whether the work tree differed from it."""
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "queries", "postgres"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + (" with uncommitted changes to src/queries" if dirty else "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="jobtable's benchmark: the runner beside the raw limit of its own SQL.",
    )
    parser.add_argument("--quick", action="store_true", help="small counts: under 2 minutes")
    parser.add_argument("--engine", choices=["sqlite", "postgres", "all"], default="all")
    parser.add_argument("--repeat", type=int, default=None, help="runs per figure (3; quick: 1)")
    parser.add_argument(
        "--only",
        action="append",
        choices=SECTIONS,
        default=[],
        help="run only this section (again for more); the other rows show -",
    )
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--pg-url", default=_db.PG_URL, help="the PostgreSQL server to use")
    parser.add_argument(
        "--peers",
        action="store_true",
        help="instead: jobtable beside huey, procrastinate and pgqueuer (needs the bench extra)",
    )
    args = parser.parse_args(argv)
    plan = dataclasses.replace(
        Plan.make(quick=args.quick, repeat=args.repeat), only=tuple(args.only)
    )
    engines = ["sqlite", "postgres"] if args.engine == "all" else [args.engine]
    if args.peers:
        from bench import _peers

        began = time.perf_counter()
        details = [*machine_details(), ("jobtable", _revision())]
        sys.stdout.write(
            Table("Machine", ["", ""], [[k, v] for k, v in details]).render(args.markdown)
        )
        sys.stdout.write("\n")
        sys.stdout.flush()
        sys.stdout.write(
            _peers.main(
                engines, args.pg_url, quick=args.quick, rounds=args.repeat, markdown=args.markdown
            )
        )
        sys.stdout.write(f"Took {time.perf_counter() - began:.0f} s.\n")
        return
    began = time.perf_counter()
    details = machine_details()
    details.append(("SQLite", sqlite3.sqlite_version))
    details.append(("jobtable", _revision()))
    details.append(("mode", ("quick" if plan.quick else "full") + f", --repeat {plan.repeat}"))
    if plan.only:
        details.append(("only", ", ".join(plan.only)))
    out = sys.stdout
    machine = Table("Machine", ["", ""], [[k, v] for k, v in details])
    out.write(machine.render(args.markdown) + "\n")
    out.flush()
    for engine in engines:
        log(f"{engine}: starting")
        try:
            db = _db.create(engine, args.pg_url)
        except Exception as err:
            if engine != "postgres":
                raise
            note = f"PostgreSQL skipped: {_db.redacted(args.pg_url)} is unreachable ({err})"
            log(note)
            out.write(note + "\n\n")
            continue
        try:
            version = db.version()
            results = run_engine(db, plan)
        finally:
            db.close()
        table = engine_table(engine, version, plan, results)
        table.notes += results.notes
        out.write(table.render(args.markdown) + "\n")
        out.write(targets_table(engine, results).render(args.markdown) + "\n")
        out.flush()
    out.write(f"Took {time.perf_counter() - began:.0f} s.\n")
