"""Worker processes of two versions, interleaved: ``python -m bench._processes_ab BEFORE [AFTER]``.

BEFORE and AFTER are git revisions (AFTER defaults to the work tree); each
one's ``src`` is exported to a temporary folder beside a copy of this
benchmark. Each round drains ``--jobs`` queued no-op jobs (enqueued by
this process, on the work tree's code) with 1, 2 and 4 worker processes
(``--procs``) of each version in turn, the versions' order alternating
from round to round, as the "worker processes" section does (4 workers a
process). Prints each run, then the medians.

``python -m bench._processes_ab main --engine sqlite --jobs 3000 --rounds 8``
"""

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from bench import _ab, _databases, _processes

ROOT = Path(__file__).resolve().parent.parent


def _tree(revision: str | None, into: Path) -> Path:
    """A folder holding revision's src (the work tree's for None) and this benchmark."""
    if revision is None:
        shutil.copytree(ROOT / "src", into / "src")
    else:
        _ab._export(revision, into)
    shutil.copytree(ROOT / "bench", into / "bench")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench._processes_ab")
    parser.add_argument("before")
    parser.add_argument("after", nargs="?", default=None, help="default: the work tree")
    parser.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--procs", default="1,2,4")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    temp = Path(tempfile.mkdtemp(prefix="jobtable-processes-ab-"))
    db = _databases.create(args.engine)
    found: dict[tuple[str, int], list[float]] = {}
    try:
        trees = {
            "before": _tree(args.before, temp / "before"),
            "after": _tree(args.after, temp / "after"),
        }
        for number in range(args.rounds):
            names = list(trees) if number % 2 == 0 else list(trees)[::-1]
            for name in names:
                _processes.ROOT = trees[name]
                for procs in (int(p) for p in args.procs.split(",")):
                    rate = _processes.processes(db, db.store, procs, args.jobs)
                    found.setdefault((name, procs), []).append(rate)
                    print(f"round {number + 1}, {name}, {procs} processes: {rate:,.0f} jobs/s")
    finally:
        db.close()
        shutil.rmtree(temp, ignore_errors=True)
    for (name, procs), rates in sorted(found.items()):
        print(f"{name}, {procs} processes: median {statistics.median(rates):,.0f} jobs/s")


if __name__ == "__main__":
    main()
