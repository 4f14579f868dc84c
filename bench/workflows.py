"""What a workflow's dependencies cost a job's life, beside a plain job's: the "workflows" figures.

Each round, on a fresh store of each engine, runs four drains one job at a
time (``jobtable.testing.drain``: claim, handler, outcome, as a runner does,
with no concurrency to blur the ratios), interleaved so that their ratios
compare runs made moments apart:

- plain: N independent jobs (the baseline: a claim and a plain finish);
- chain: N jobs, each after the one before (each finish makes the next ready);
- fan-out: one job adds N children after itself and one fan-in job after
  all of them, through ``ctx.workflow``; its own attempt stores the N + 1
  jobs and their N * 2 dependencies with its success;
- the children of that fan-out and the fan-in (each child's finish counts
  its edge of the fan-in's N).

Per-job times are the drain's seconds over the jobs it ran; the ratios are
each against plain. A workflow's ids and edges are stored at enqueue, so
the enqueue is timed apart (enqueue of the chain against N plain enqueues).

    .venv/bin/python -m bench.workflows                  # N = 1,000 chain, 10,000 fan-out; 3 rounds
    .venv/bin/python -m bench.workflows --quick          # N = 200 and 1,000; 1 round
    .venv/bin/python -m bench.workflows --engine sqlite  # or postgres, or all (the default)
    .venv/bin/python -m bench.workflows --plain 1000 --engine sqlite
        # only N plain jobs' drain, wall and CPU per job: run it under another
        # revision's src (git archive REV src | tar -x -C DIR; PYTHONPATH=DIR/src)
        # alternately with this one's to compare the plain path
"""

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import jobtable
from bench._db import PG_URL
from jobtable.testing import drain
from jobtable.testing.pytest_plugin import postgres_schema

step = jobtable.Kind("step", int, int)
parent = jobtable.Kind("parent", int, int)
gather = jobtable.Kind("gather", int, int)


def _runner(store: jobtable.Store) -> jobtable.Runner:
    runner = jobtable.Runner(store, workers=1)

    @runner.handler(step)
    async def do_step(ctx: jobtable.JobContext[int], n: int) -> int:
        return n

    @runner.handler(parent)
    async def do_parent(ctx: jobtable.JobContext[int], n: int) -> int:
        children = [ctx.workflow.add(step, i, after=[ctx.workflow.current]) for i in range(n)]
        ctx.workflow.add(gather, n, after=children)
        return n

    @runner.handler(gather)
    async def do_gather(ctx: jobtable.JobContext[int], n: int) -> int:
        return n

    return runner


async def _timed_drain(runner: jobtable.Runner, expected: int) -> float:
    begin = time.perf_counter()
    records = await drain(runner, max_runs=expected + 10)
    took = time.perf_counter() - begin
    assert len(records) == expected, (len(records), expected)
    return took / expected


async def _round(store: jobtable.Store, chain: int, fan: int) -> dict[str, float]:
    runner = _runner(store)
    figures: dict[str, float] = {}
    begin = time.perf_counter()
    step.enqueue_many(store, range(chain))
    figures["enqueue plain"] = (time.perf_counter() - begin) / chain
    figures["plain"] = await _timed_drain(runner, chain)

    wf = jobtable.Workflow("chain")
    node = wf.add(step, 0)
    for i in range(1, chain):
        node = wf.add(step, i, after=[node])
    begin = time.perf_counter()
    wf.enqueue(store)
    figures["enqueue chain"] = (time.perf_counter() - begin) / chain
    figures["chain"] = await _timed_drain(runner, chain)

    fanned = jobtable.Workflow("fan-out")
    fanned.add(parent, fan)
    fanned.enqueue(store)
    begin = time.perf_counter()
    ran = await runner.run_next()
    figures["fan-out parent (whole attempt)"] = time.perf_counter() - begin
    assert ran is not None
    figures["fan-out children and fan-in"] = await _timed_drain(runner, fan + 1)
    return figures


@contextlib.contextmanager
def _store(engine: str) -> Iterator[jobtable.Store]:
    if engine == "sqlite":
        with (
            tempfile.TemporaryDirectory() as folder,
            jobtable.Store.open(Path(folder) / "bench.db") as store,
        ):
            yield store
        return
    with postgres_schema(PG_URL) as url, jobtable.Store.open(url) as store:
        yield store


async def _plain(store: jobtable.Store, count: int) -> str:
    """N plain jobs' drain: wall and CPU time per job, in microseconds."""
    runner = _runner(store)
    step.enqueue_many(store, range(count))
    wall, cpu = time.perf_counter(), time.process_time()
    await drain(runner, max_runs=count + 1)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return f"plain drain: wall {wall / count * 1e6:.0f} µs, cpu {cpu / count * 1e6:.0f} µs a job"


def _report(engine: str, rounds: list[dict[str, float]], chain: int, fan: int) -> str:
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    lines = [
        f"### {engine}: chain of {chain:,}, fan-out of {fan:,}, median of {len(rounds)} rounds",
        "",
        "| figure | per job | against plain |",
        "|---|---|---|",
    ]
    for name, value in median.items():
        if name.startswith("enqueue"):
            base = median["enqueue plain"]
        elif name.endswith("(whole attempt)"):
            lines.append(f"| {name} | {value * 1000:.0f} ms | - |")
            continue
        else:
            base = median["plain"]
        lines.append(f"| {name} | {value * 1e6:.0f} µs | {value / base:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.workflows")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--engine", choices=["sqlite", "postgres", "all"], default="all")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--plain", type=int, default=None, help="only N plain jobs' drain")
    args = parser.parse_args()
    chain, fan = (200, 1_000) if args.quick else (1_000, 10_000)
    rounds = args.rounds or (1 if args.quick else 3)
    engines = ["sqlite", "postgres"] if args.engine == "all" else [args.engine]
    for engine in engines:
        if args.plain:
            with _store(engine) as store:
                print(engine, asyncio.run(_plain(store, args.plain)))
            continue
        figures = []
        for _ in range(rounds):
            with _store(engine) as store:
                figures.append(asyncio.run(_round(store, chain, fan)))
        print(_report(engine, figures, chain, fan))


if __name__ == "__main__":
    main()
