"""The cost of a unique key on the enqueue path: ``make bench``'s "uniqueness" section.

One caller enqueues one job a call, then 100 a call, with and without a
unique key, interleaved in each round so that the ratios compare runs made
moments apart. The Unique values are built before the clock starts, as the
payloads are: what is timed is the library's path and the database's.

- plain: no key, the ordinary insert;
- fresh key: a new key each call, so every insert stores (the INSERT ... ON
  CONFLICT DO NOTHING against jobs_unique, and its index entry);
- held key: every call the same key, so all but the first collide and read
  the holder (jobs_unique's lookup) instead of storing;
- enqueue_many with a key from a payload field, every payload distinct,
  against plain enqueue_many (one INSERT per job instead of one batch).
"""

import time
from collections.abc import Callable

import jobtable
from bench import _db
from bench._jobs import Ping, make_runner
from bench._stats import Figure, Table, cell, ratio

FIGURES = (
    ("uniq.plain", "enqueue, 1 a call, no key (this section's own run)"),
    ("uniq.fresh", "enqueue, 1 a call, a fresh unique key each"),
    ("uniq.held", "enqueue, 1 a call, a held key: a duplicate"),
    ("uniq.many.plain", "enqueue_many, 100 a call, no key"),
    ("uniq.many.fields", "enqueue_many, 100 a call, a key from a payload field"),
)
BASELINE = {
    "uniq.fresh": "uniq.plain",
    "uniq.held": "uniq.plain",
    "uniq.many.fields": "uniq.many.plain",
}


def _single(store: jobtable.Store, count: int, uniques: list[jobtable.Unique] | None) -> float:
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    enqueue = kinds.noop.enqueue
    payload = Ping()
    begin = time.perf_counter()
    if uniques is None:
        for _ in range(count):
            enqueue(payload)
    else:
        for unique in uniques:
            enqueue(payload, unique=unique)
    return time.perf_counter() - begin


def _many(store: jobtable.Store, count: int, unique: jobtable.Unique | None) -> float:
    kinds = make_runner(store, workers=1, name="bench-enqueuer")
    batches = [
        [Ping(t=float(n)) for n in range(start, start + _db.BATCH)]
        for start in range(0, count, _db.BATCH)
    ]
    begin = time.perf_counter()
    for payloads in batches:
        kinds.noop.enqueue_many(payloads, unique=unique)
    return time.perf_counter() - begin


def measure(
    db: _db.Database,
    store: jobtable.Store,
    repeat: int,
    single: int,
    batched: int,
    add: Callable[[str, float, str], None],
) -> None:
    """Adds each FIGURES key's rate in jobs/s, repeat times, resetting the table between runs."""
    held = jobtable.Unique(key="held")
    fields = jobtable.Unique(fields=("t",))
    runs: list[tuple[str, int, Callable[[], float]]] = [
        ("uniq.plain", single, lambda: _single(store, single, None)),
        (
            "uniq.fresh",
            single,
            lambda: _single(store, single, [jobtable.Unique(key=str(n)) for n in range(single)]),
        ),
        ("uniq.held", single, lambda: _single(store, single, [held] * single)),
        ("uniq.many.plain", batched, lambda: _many(store, batched, None)),
        ("uniq.many.fields", batched, lambda: _many(store, batched, fields)),
    ]
    for _ in range(repeat):
        for key, count, run in runs:
            add(key, count / run(), "jobs/s")
            db.reset()


def add_rows(table: Table, get: Callable[[str], Figure | None]) -> None:
    """The section's rows: each figure, and the keyed ones against their no-key baseline."""
    for key, label in FIGURES:
        base = BASELINE.get(key)
        table.add(
            label,
            cell(get(key)),
            "-" if base is None else cell(get(base)),
            "-" if base is None else ratio(get(key), get(base)),
            "" if base is None else "raw column: the same without a key",
        )
