"""A worker process of the soak: ``python -m bench._soak_child '<json>'``.

It opens the store at ``target``, registers the ``soak`` kind on a runner
named ``name`` with ``workers`` workers (and ``retention`` seconds, when
given; the runner's default otherwise), prints ``ready`` and waits for a line
on stdin. Then it starts the runner, prints ``started``, and answers each
``stats`` line with one JSON line: how many handlers returned since the last
one (``done``) and each started job's enqueue-to-start latency in
milliseconds (``lat``, from the payload's ``time.time()`` at enqueue). Any
other line (or EOF) stops the runner and ends the process. With
``from_head`` true, PostgreSQL's claims start at the queue's head every
time, as before claims resumed where the last one stopped (a benchmark's
baseline).
"""

import asyncio
import datetime
import json
import sys
import threading
import time
from typing import Any

import jobtable
from bench._jobs import Ping
from jobtable._engines.postgres import claim_cursor


class Tally:
    """What the process's handlers saw since the last take, under a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = 0
        self._lat: list[float] = []

    async def handle(self, ctx: jobtable.JobContext[None], payload: Ping) -> None:
        """The soak kind's handler: records the job's latency, then returns at once."""
        started = time.time()
        with self._lock:
            self._lat.append((started - payload.t) * 1000)
            self._done += 1

    def take(self) -> dict[str, Any]:
        """The counts since the last take, and resets them."""
        with self._lock:
            out = {"done": self._done, "lat": [round(x, 3) for x in self._lat]}
            self._done = 0
            self._lat = []
        return out


def make_runner(store: jobtable.Store, args: dict[str, Any], tally: Tally) -> jobtable.Runner:
    """The process's runner, the soak kind registered."""
    options: dict[str, Any] = {}
    if args.get("retention") is not None:
        options["retention"] = datetime.timedelta(seconds=args["retention"])
    runner = jobtable.Runner(store, workers=args["workers"], name=args["name"], **options)
    runner.register("soak", tally.handle)
    return runner


async def _serve(runner: jobtable.Runner, tally: Tally) -> None:
    loop = asyncio.get_running_loop()
    await runner.start()
    print("started", flush=True)
    while (await loop.run_in_executor(None, sys.stdin.readline)).strip() == "stats":
        print(json.dumps(tally.take()), flush=True)
    runner.stop()
    await runner.wait()


def main() -> None:
    """Runs the process as the module's docstring says."""
    args: dict[str, Any] = json.loads(sys.argv[1])
    if args.get("from_head"):
        claim_cursor.RESCAN_SECONDS = 0.0
    store = jobtable.Store.open(args["target"])
    tally = Tally()
    runner = make_runner(store, args, tally)
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        asyncio.run(_serve(runner, tally))
    finally:
        store.close()


if __name__ == "__main__":
    main()
