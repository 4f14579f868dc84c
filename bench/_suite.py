"""The measurements of one engine, section by section: the runner and, beside it, the raw limit.

Each section has a module of its own (``bench._raw_limits``,
``bench._end_to_end``, ``bench._processes``, ``bench._enqueue``,
``bench._uniqueness``, ``bench._latency``, ``bench._wait``, ``bench._memory``,
``bench._finished_rows``, ``bench._flow``, ``bench._wakeup``,
``bench._sleepers``, ``bench._signals``, ``bench._batch``); ``run_engine``
runs them in order and keeps the figures of the others when one stops early.
"""

from collections.abc import Callable

from bench import (
    _batch,
    _db,
    _end_to_end,
    _enqueue,
    _finished_rows,
    _flow,
    _latency,
    _memory,
    _processes,
    _raw_limits,
    _signals,
    _sleepers,
    _wait,
    _wakeup,
)
from bench import _uniqueness as _uniqueness_section
from bench._plan import Plan, Results, log

Measure = Callable[[_db.Database, Plan, Results], None]
"""A section: it adds its figures (and any note) to the results, running as the plan says."""


def _uniqueness(db: _db.Database, plan: Plan, results: Results) -> None:
    """The uniqueness section (bench._uniqueness) on the plan's counts."""
    log("enqueue with a unique key against without")
    _uniqueness_section.measure(
        db, db.store, plan.repeat, plan.single_calls, plan.batched_jobs, results.add
    )


MEASURES: dict[str, Measure] = {
    "raw limits": _raw_limits.measure,
    "end to end": _end_to_end.measure,
    "worker processes": _processes.measure,
    "enqueue": _enqueue.measure,
    "uniqueness": _uniqueness,
    "latency": _latency.measure,
    "wait": _wait.measure,
    "memory": _memory.measure,
    "finished rows": _finished_rows.measure,
    "flow": _flow.measure,
    "wake-up": _wakeup.measure,
    "sleepers": _sleepers.measure,
    "signals": _signals.measure,
    "batch": _batch.measure,
}
"""Each section by name, in the order run_engine runs them: later ones size runs by earlier ones."""

SECTIONS = tuple(MEASURES)
"""The measurements run_engine makes, in order."""


def run_engine(db: _db.Database, plan: Plan) -> Results:
    """Every measurement of one engine, repeated as plan says."""
    results = Results()
    for name, measure in MEASURES.items():
        if plan.only and name not in plan.only:
            continue
        try:
            measure(db, plan, results)
        except Exception as err:  # e.g. the server restarted: keep the other figures
            results.notes.append(
                f"The {name} measurements stopped early: {type(err).__name__}: {err}"
            )
            log(results.notes[-1])
            try:
                db.reconnect()
                db.reset()
            except Exception as again:
                log(f"cannot go on with this engine: {again}")
                break
    return results
