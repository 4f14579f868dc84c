"""A worker process for test_faults.py: one ``Runner.run()`` over a store until a signal.

Usage: ``python fault_worker.py TARGET NAME --runs DIR [options]`` (see ``--help``).

Every handler first records its run as an empty file ``DIR/<job id>.<pid>.<nonce>``,
one file per run, so the test counts how often each job ran, and in which
process, even when the process is killed. The kinds:

- ``work`` (payload: seconds, result: the runner's name) sleeps for its payload.
  With ``--publish`` it first publishes ``"<name> <pid>"``; with ``--hold`` it
  then waits until the runner stops instead of sleeping, so the job stays held
  by this process until it is killed.
- ``stamp`` (payload: ignored, result: a time) returns ``time.time()`` as the
  handler started: the test's measure of how soon a job enqueued elsewhere
  started here.
- ``fence`` (payload: ignored, result: text) publishes ``"started"``, waits
  for the file ``--gate`` to exist, then publishes ``"late partial"`` (logging
  whether that was refused) and returns ``"late result"``.

Logs go to stderr, one record per line, with the process id.
"""

import argparse
import logging
import os
import pathlib
import secrets
import time

import jobtable

_log = logging.getLogger("fault_worker")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("target")
    parser.add_argument("name")
    parser.add_argument("--runs", type=pathlib.Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--lease", type=float, default=30.0)
    parser.add_argument("--poll", type=float, default=0.05)
    parser.add_argument("--retry-cap", type=float, default=5.0)
    parser.add_argument("--busy-timeout", type=float, default=5.0)
    parser.add_argument("--publish", action="store_true")
    parser.add_argument("--hold", action="store_true")
    parser.add_argument("--gate", type=pathlib.Path)
    args = parser.parse_args()
    name: str = args.name
    runs_dir: pathlib.Path = args.runs
    gate: pathlib.Path | None = args.gate
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s {name} pid=%(process)d %(name)s %(levelname)s %(message)s",
    )
    # The retries after the first of an outage are DEBUG records; tests count them.
    logging.getLogger("jobtable").setLevel(logging.DEBUG)

    def record_run(job_id: str) -> None:
        (runs_dir / f"{job_id}.{os.getpid()}.{secrets.token_hex(4)}").touch(exist_ok=False)

    def work(ctx: jobtable.JobContext[str], payload: float) -> str:
        record_run(ctx.id)
        if args.publish:
            ctx.publish(f"{name} {os.getpid()}")
        if args.hold:
            ctx.sleep(3600)
        else:
            time.sleep(payload)
        return name

    def stamp(ctx: jobtable.JobContext[float], payload: int) -> float:
        started = time.time()
        record_run(ctx.id)
        return started

    def fence(ctx: jobtable.JobContext[str], payload: int) -> str:
        record_run(ctx.id)
        ctx.publish("started")
        if gate is None:
            raise jobtable.Failure("fault_worker: the fence kind needs --gate")
        _log.info("fence %s: started, waiting for %s", ctx.id, gate)
        while not gate.exists():
            time.sleep(0.02)
        _log.info("fence %s: resumed, publishing late", ctx.id)
        try:
            ctx.publish("late partial")
        except jobtable.NotRunning as err:
            _log.warning("fence %s: late publish refused: %s", ctx.id, err)
        else:
            _log.warning("fence %s: late publish accepted", ctx.id)
        _log.info("fence %s: returning late result", ctx.id)
        return "late result"

    with jobtable.Store.open(args.target, busy_timeout=args.busy_timeout) as store:
        runner = jobtable.Runner(
            store,
            name=name,
            workers=args.workers,
            lease=args.lease,
            poll_interval=args.poll,
            retry_backoff=jobtable.WriteBackoff(min(0.05, args.retry_cap), args.retry_cap),
        )
        runner.register("work", work)
        runner.register("stamp", stamp)
        runner.register("fence", fence)
        runner.run()


if __name__ == "__main__":
    main()
