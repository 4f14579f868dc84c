"""Two versions of jobtable interleaved in one sitting: ``python -m bench._ab BEFORE [AFTER]``.

BEFORE and AFTER are git revisions (AFTER defaults to the work tree). Each
one's ``src`` is exported to a temporary folder, and each round runs one
child process per version, alternately, on the same workload as the peers
comparison (``bench._peers``): enqueue N one a call, drain them with 1
worker, end to end, then enqueue N 100 a call and drain them with 4 workers,
then enqueue N one a call from 8 and 32 threads and from 32 async tasks
(their ratio is to the one caller); and beside them, in the same child,
the raw one-insert transaction and the raw claim-and-finish cycles of 1 and
4 jobs a commit, so each figure also has its ratio to the raw SQL measured
next to it. The benchmark's own code is the work tree's for both.

``python -m bench._ab BEFORE [AFTER] --engine postgres --jobs 2000 --rounds 3``; with
``--cycle`` only the drains of 1 and 4 workers and the raw cycles beside them.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import _db, _enqueue
from bench._stats import Table

ROOT = Path(__file__).resolve().parent.parent

ROWS = [
    ("enqueue.1", "enqueue, 1 job a call", "raw.insert1"),
    ("drain.1", "drain, 1 worker", "raw.cycle1"),
    ("e2e.1", "end to end, 1 worker", None),
    ("enqueue.100", "enqueue, 100 jobs a call", None),
    ("drain.4", "drain, 4 workers", "raw.cycle4"),
    ("threads.8", "enqueue, 1 job a call, 8 threads (vs one caller)", "enqueue.1"),
    ("threads.32", "enqueue, 1 job a call, 32 threads (vs one caller)", "enqueue.1"),
    ("tasks.32", "aenqueue, 32 async tasks (vs one caller)", "enqueue.1"),
    ("cpu.1", "CPU µs a job (this process), drain, 1 worker (--cycle)", None),
    ("cpu.4", "CPU µs a job (this process), drain, 4 workers (--cycle)", None),
]
"""Each figure: key, label, and what its ratio is to (raw SQL, or the one caller)."""


def cycle_child(engine: str, jobs: int, *, durable: bool = True) -> dict[str, float]:
    """The drains of 1 and 4 workers, each right after its raw claim-and-finish cycle."""
    from bench._peer_jobtable import Jobtable

    queue = Jobtable(engine, _db.PG_URL, durable=durable)
    out: dict[str, float] = {}
    try:
        db = queue.db
        for workers in (1, 4):
            out[f"raw.cycle{workers}"] = jobs / db.raw_cycle(jobs, workers)
            db.reset()
            queue.enqueue_batch(jobs)
            cpu = time.process_time()
            out[f"drain.{workers}"] = jobs / queue.drain(jobs, workers)
            out[f"cpu.{workers}"] = (time.process_time() - cpu) / jobs * 1e6
            queue.clear()
    finally:
        queue.close()
    return out


def child(engine: str, jobs: int, *, durable: bool = True) -> dict[str, float]:
    """One round of one version, in this process: jobs per second by figure."""
    from bench._peer_jobtable import Jobtable

    queue = Jobtable(engine, _db.PG_URL, durable=durable)
    out: dict[str, float] = {}
    try:
        db = queue.db
        out["raw.insert1"] = jobs / db.raw_insert(jobs, 1)
        db.reset()
        one = queue.enqueue_one(jobs)
        drained = queue.drain(jobs, 1)
        out["enqueue.1"] = jobs / one
        out["drain.1"] = jobs / drained
        out["e2e.1"] = jobs / (one + drained)
        queue.clear()
        out["raw.cycle1"] = jobs / db.raw_cycle(jobs, 1)
        db.reset()
        out["enqueue.100"] = jobs / queue.enqueue_batch(jobs)
        out["drain.4"] = jobs / queue.drain(jobs, 4)
        queue.clear()
        out["raw.cycle4"] = jobs / db.raw_cycle(jobs, 4)
        db.reset()
        for threads in (8, 32):
            out[f"threads.{threads}"] = jobs / queue.enqueue_threads(jobs, threads)
            queue.clear()
        out["tasks.32"] = jobs / _enqueue.enqueue_tasks(db.store, jobs, 32)
        queue.clear()
    finally:
        queue.close()
    return out


def _export(revision: str, into: Path) -> Path:
    """The src folder of revision, exported under into."""
    archive = subprocess.run(
        ["git", "archive", revision, "src"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench._ab")
    parser.add_argument("before")
    parser.add_argument("after", nargs="?", default=None, help="default: the work tree")
    parser.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--normal",
        action="store_true",
        help="SQLite with synchronous=NORMAL on both sides: no fsync, the CPU's costs alone",
    )
    parser.add_argument(
        "--cycle",
        action="store_true",
        help="only the drains of 1 and 4 workers, each beside its raw claim-and-finish cycle",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return parser


def _child_round(args: argparse.Namespace, src: Path) -> dict[str, float]:
    """One round of the version whose source is src, in a child process: its figures."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)])}
    line = subprocess.run(
        [
            *(sys.executable, "-m", "bench._ab", args.before, "--child"),
            *("--engine", args.engine, "--jobs", str(args.jobs)),
            *(["--normal"] if args.normal else []),
            *(["--cycle"] if args.cycle else []),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    found: dict[str, float] = json.loads(line)
    return found


def _interleaved(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """Each version's figures over args.rounds rounds, the versions alternating in each."""
    temp = Path(tempfile.mkdtemp(prefix="jobtable-ab-"))
    try:
        versions = {"before": _export(args.before, temp / "before")}
        if args.after is None:
            versions["after"] = ROOT / "src"
        else:
            versions["after"] = _export(args.after, temp / "after")
        found: dict[str, dict[str, list[float]]] = {name: {} for name in versions}
        for number in range(args.rounds):
            for name, src in versions.items():
                print(f"  round {number + 1}: {name}", file=sys.stderr, flush=True)
                for key, value in _child_round(args, src).items():
                    found[name].setdefault(key, []).append(value)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return found


def _table(args: argparse.Namespace, found: dict[str, dict[str, list[float]]]) -> Table:
    """The medians of both versions, each figure beside its ratio to raw SQL or one caller."""
    after = args.after or "work tree"
    table = Table(
        f"{args.engine}{', synchronous=NORMAL' if args.normal else ''}: "
        f"{args.before} vs {after}, {args.jobs} jobs, "
        f"median of {args.rounds} interleaved round(s), jobs/s",
        ["figure", "before", "after", "after / before", "before / raw", "after / raw"],
    )

    def median(name: str, key: str | None) -> float | None:
        values = found[name].get(key or "")
        return statistics.median(values) if values else None

    for key, label, raw in ROWS:
        if key not in found["before"]:
            continue
        b, a = median("before", key), median("after", key)
        rb, ra = median("before", raw), median("after", raw)
        shown = "{:.2f}x" if raw == "enqueue.1" else "{:.0%}"
        table.add(
            label,
            f"{b:,.0f}" if b else "-",
            f"{a:,.0f}" if a else "-",
            f"{a / b:.2f}x" if a and b else "-",
            shown.format(b / rb) if b and rb else "-",
            shown.format(a / ra) if a and ra else "-",
        )
    return table


def main() -> None:
    """Runs ``python -m bench._ab`` on the command line's arguments."""
    args = _parser().parse_args()
    if args.child:
        measure = cycle_child if args.cycle else child
        print(json.dumps(measure(args.engine, args.jobs, durable=not args.normal)))
        return
    print(_table(args, _interleaved(args)).render(markdown=True))


if __name__ == "__main__":
    main()
