"""Flow control across real runner processes, on both engines, read from their attempts' log.

Each worker (flow_worker.py) logs every attempt's start and end. A start is
logged after its claim committed and an end before its outcome did, so two
logged attempts overlap only if the database had both running: the log can
show less concurrency than there was, never more than the limits allowed.
"""

import asyncio
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
WORKER = pathlib.Path(__file__).with_name("flow_worker.py")
STEP = jobtable.Kind("step", dict[str, object], int, queue="work", max_attempts=3)
HANG = jobtable.Kind("hang", dict[str, object], int, queue="work", max_attempts=3)


@pytest.fixture
def log(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "attempts.log"


@pytest.fixture
def spawn(store_target: str, log: pathlib.Path) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, mode: str, workers: int = 4) -> subprocess.Popen[bytes]:
        args = [sys.executable, str(WORKER), store_target, name, str(workers), str(log), mode]
        process = subprocess.Popen(args, start_new_session=True)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in started:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def events(log: pathlib.Path) -> list[tuple[float, str, str, str]]:
    """(time, start or end, job id, key) of every logged attempt, in time order."""
    if not log.exists():
        return []
    found = []
    for line in log.read_text(encoding="utf-8").splitlines():
        what, job_id, key, at = line.split()
        found.append((float(at), what, job_id, key))
    return sorted(found)


def most_running(log: pathlib.Path, key: str | None = None, skip: str = "") -> int:
    """The most attempts (of key, or of any; never of job skip) the log shows running at once."""
    running = most = 0
    for _, what, job_id, at_key in events(log):
        if (key is not None and at_key != key) or job_id == skip:
            continue
        running += 1 if what == "start" else -1
        most = max(most, running)
    return most


def done(store: jobtable.Store, ids: list[str]) -> Callable[[], bool]:
    return lambda: all(store.get(i).status is jobtable.Status.SUCCEEDED for i in ids)


async def test_a_global_limit_holds_across_processes_and_is_reached(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    log: pathlib.Path,
    wait_until: WaitUntil,
) -> None:
    ids = STEP.enqueue_many(store, [{"pause": 0.05} for _ in range(40)])
    for name in ("w1", "w2", "w3"):
        spawn(name, "global", workers=4)
    await wait_until(done(store, ids), limit=120)
    assert most_running(log) == 3


async def test_a_partition_limit_holds_per_key_runs_keys_together_and_starves_none(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    log: pathlib.Path,
    wait_until: WaitUntil,
) -> None:
    flood = STEP.enqueue_many(
        store, [{"key": "big", "pause": 0.05} for _ in range(30)], partition_key="big"
    )
    small = STEP.enqueue_many(
        store, [{"key": "small", "pause": 0.05} for _ in range(3)], partition_key="small"
    )
    others = STEP.enqueue_many(
        store, [{"key": "other", "pause": 0.05} for _ in range(3)], partition_key="other"
    )
    for name in ("w1", "w2"):
        spawn(name, "partition", workers=3)
    await wait_until(done(store, flood + small + others), limit=120)
    assert most_running(log, "big") == most_running(log, "small") == 1
    assert most_running(log) >= 2
    starts = [job_id for _, what, job_id, _ in events(log) if what == "start"]
    # The small key's jobs all started before the flooded key's tenth did.
    assert max(starts.index(i) for i in small) < starts.index(flood[9])


async def test_a_rate_limit_holds_in_every_window_across_processes(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    log: pathlib.Path,
    wait_until: WaitUntil,
) -> None:
    ids = STEP.enqueue_many(store, [{"pause": 0.0} for _ in range(12)])
    for name in ("w1", "w2"):
        spawn(name, "rate", workers=4)
    await wait_until(done(store, ids), limit=120)
    # The claims' own times (started_at): a window of 2 s holds 5 at most.
    # Counted by the database's clock, stamped by the runners' clock, on one
    # machine: 0.1 s of slack covers the moments between the two.
    starts = sorted(store.inspect(i).started_at for i in ids)  # type: ignore[type-var]
    for i in range(len(starts) - 5):
        assert (starts[i + 5] - starts[i]).total_seconds() > 2.0 - 0.1  # type: ignore[operator]


async def test_a_sequence_runs_in_order_one_at_a_time_through_a_retry_and_a_kill(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    log: pathlib.Path,
    wait_until: WaitUntil,
) -> None:
    head = HANG.enqueue(store, {"key": "s"}, sequence_key="s")
    rest = STEP.enqueue_many(
        store,
        [{"key": "s", "fail_first": n == 2} for n in range(6)],
        sequence_key="s",
    )
    other = STEP.enqueue_many(store, [{"key": "o"} for _ in range(4)], sequence_key="o")
    doomed = spawn("doomed", "plain", workers=4)
    await wait_until(lambda: store.get(head).status is jobtable.Status.RUNNING)
    await wait_until(done(store, other), limit=60)
    # The head hangs: nothing behind it started.
    assert not any(job_id in rest for _, _, job_id, _ in events(log))
    os.killpg(doomed.pid, signal.SIGKILL)
    await asyncio.to_thread(doomed.wait)
    store.cancel(head)  # interrupted and queued again after the lease, it is cancelled instead
    spawn("w1", "plain", workers=4)
    spawn("w2", "plain", workers=4)
    await wait_until(lambda: store.get(head).status is jobtable.Status.CANCELLED, limit=60)
    store.delete(head)
    await wait_until(done(store, rest), limit=120)
    order = [job_id for _, what, job_id, key in events(log) if what == "start" and key == "s"]
    assert order[0] == head
    # In enqueue order, the retried job twice in its place.
    assert order[1:] == rest[:3] + rest[2:]
    # The killed head never logged its end: its attempt is left out.
    assert most_running(log, "s", skip=head) == 1


async def test_nothing_starts_while_paused_and_everything_after_resume(
    store: jobtable.Store,
    spawn: Callable[..., subprocess.Popen[bytes]],
    log: pathlib.Path,
    wait_until: WaitUntil,
) -> None:
    store.pause("work")
    ids = STEP.enqueue_many(store, [{} for _ in range(10)])
    sentinel = jobtable.Kind("step", dict[str, object], int, queue="other")
    spawn("w1", "plain", workers=2)
    runner_seen = sentinel.enqueue(store, {})
    # The worker runs only "work": its claims of it find the pause, every poll.
    await wait_until(lambda: len(store.runners()) == 1)
    await asyncio.sleep(0.5)
    assert events(log) == []
    assert store.inspect(ids[0]).waiting is jobtable.WaitReason.PAUSED
    store.resume("work")
    await wait_until(done(store, ids), limit=60)
    assert store.get(runner_seen).status is jobtable.Status.QUEUED
