"""``jobtable signal NAME KEY --payload JSON``, run as users run it: the console script.

A job waits for the signal in this process's runner; the command, in a
process of its own, resumes it with its payload, and the runner, whose
poll is far longer than the test, starts it at the signal's commit.
"""

import asyncio
import datetime
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Awaitable, Callable

import pytest
from pydantic import BaseModel

import jobtable

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
Finished = Callable[[jobtable.Runner, list[str]], Callable[[], bool]]

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")


class Decision(BaseModel):
    approved: bool
    note: str


DECIDED = jobtable.Signal("decided", Decision)
REVIEW = jobtable.Kind("review", str, str)


def run(store_target: str, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    return subprocess.run(
        [str(SCRIPT), *args, "--store", store_target],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )


async def test_the_signal_command_resumes_the_waiting_job_with_its_payload(
    store: jobtable.Store, store_target: str, wait_until: WaitUntil, finished: Finished
) -> None:
    # Far longer than the test: the job must be woken by the signal's commit
    # (NOTIFY, the file watch), not found at a poll.
    runner = jobtable.Runner(store, workers=1, poll_interval=60)

    @runner.handler(REVIEW)
    async def review(ctx: jobtable.JobContext[str], payload: str) -> str:
        answer = await ctx.wait_for(DECIDED, key=payload, timeout=datetime.timedelta(hours=1))
        if isinstance(answer, jobtable.TimedOut):
            return "timed out"
        return f"{answer.approved} {answer.note}"

    job = REVIEW.enqueue(store, "order-1")
    await runner.start()
    try:
        await wait_until(lambda: store.signal_wait(job) is not None, limit=30)
        payload = json.dumps({"approved": True, "note": "from the shell"})
        sent = await asyncio.to_thread(
            run, store_target, "signal", "decided", "order-1", "--payload", payload, "--json"
        )
        assert sent.returncode == 0, sent.stderr
        assert json.loads(sent.stdout) == {"signal": "decided", "key": "order-1", "resumed": 1}
        await wait_until(finished(runner, [job]), limit=20)
    finally:
        runner.stop()
        await runner.wait()
    assert REVIEW.get(store, job).result == "True from the shell"


def test_a_payload_that_is_not_json_is_refused_naming_the_option(
    store: jobtable.Store, store_target: str
) -> None:
    refused = run(store_target, "signal", "decided", "k", "--payload", "{approved")
    assert refused.returncode == 1
    assert refused.stderr.startswith("jobtable: error: --payload is not JSON")
