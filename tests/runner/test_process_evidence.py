"""A runner of this host whose process is gone is dead at once; one whose process runs is not.

Runners record their host (boot and pid namespace) and process (pid and
start time). The kernel then tells a runner exactly whether another runner
of its host still runs, so the jobs of one whose process is gone are
interrupted at once: at start, and between heartbeats by a live runner's
process watch. The lease still judges everything else: a process that
exists, another host's runner, a runner that recorded no process.
"""

import logging
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator

import pytest

import jobtable
from jobtable._engines.base import Queries
from jobtable._runner import process_watch
from jobtable._runner.process import ProcessId, gone, this_process
from jobtable._runner.process_watch import INTERRUPTED_FATE
from jobtable._runner.registration import EndGoneRunners, Peer
from jobtable._values import now

WaitUntil = Callable[..., Awaitable[None]]

GONE = "jobs of runners whose process ended"
"""What a runner logs when it interrupted the jobs of a runner whose process is gone."""


async def echo(ctx: jobtable.JobContext[int], payload: int) -> int:
    return payload


def me() -> ProcessId:
    found = this_process()
    assert found is not None, "this machine gives no process evidence (no Linux /proc)"
    return found


def started_ticks(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="ascii") as file:
        return file.read().rpartition(")")[2].split()[19]


def reused_pid() -> ProcessId:
    """This process's pid with another start time: the pid of a process that is gone."""
    pid, started = me().process.split()
    return ProcessId(me().host, f"{pid} {int(started) + 1}")


def register_and_claim(store: jobtable.Store, name: str, who: ProcessId | None) -> list[str]:
    """Registers runner name as process who, beating now, and claims every queued job for it."""

    def op(q: Queries) -> list[str]:
        host, process = (None, None) if who is None else who
        q.register_runner(name=name, now=now(), host=host, process=process)
        claimed = q.finish_and_claim_jobs(
            outcomes=[], runner=name, queue="default", now=now(), max_jobs=100
        )[1]
        return [row.id for row in claimed]

    return store.engine.write(op)


def registered(store: jobtable.Store, name: str) -> bool:
    return store.engine.read(lambda q: q.get_runner(name=name, now=now(), lease=30.0)) is not None


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this host that sleeps until killed; reaped afterwards."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


# What the kernel says.


def test_this_process_runs() -> None:
    assert not gone(*me())


def test_a_pid_started_at_another_time_is_a_process_that_is_gone() -> None:
    assert gone(*reused_pid())


def test_another_hosts_process_is_never_judged_gone() -> None:
    assert not gone("another-boot pid:[1]", reused_pid().process)


@pytest.mark.parametrize("process", [None, "", "12", "x 1", "-1 5", "0 7", "1 2 3"])
def test_text_this_library_did_not_write_is_never_judged_gone(process: str | None) -> None:
    assert not gone(me().host, process)


def test_no_host_is_never_judged_gone() -> None:
    assert not gone(None, reused_pid().process)


@pytest.mark.slow
def test_a_process_that_exited_is_gone(child: subprocess.Popen[bytes]) -> None:
    who = ProcessId(me().host, f"{child.pid} {started_ticks(child.pid)}")
    assert not gone(*who)
    child.kill()
    child.wait()
    assert gone(*who)


@pytest.mark.slow
async def test_a_killed_process_its_parent_has_not_reaped_is_gone(
    child: subprocess.Popen[bytes], wait_until: WaitUntil
) -> None:
    who = ProcessId(me().host, f"{child.pid} {started_ticks(child.pid)}")
    child.kill()
    # A zombie until reaped: it still has a pid and a /proc entry, and runs nothing.
    await wait_until(lambda: gone(*who))
    assert child.returncode is None, "not reaped yet"


# What a starting runner does with it.


@pytest.mark.parametrize(
    ("attempts", "status"),
    [(1, jobtable.Status.FAILED), (2, jobtable.Status.SUCCEEDED)],
)
async def test_a_start_interrupts_the_jobs_of_a_runner_of_this_host_whose_process_is_gone(
    store: jobtable.Store,
    caplog: pytest.LogCaptureFixture,
    wait_until: WaitUntil,
    attempts: int,
    status: jobtable.Status,
) -> None:
    """Its heartbeat is fresh, so its lease would hold the job for 30 s; the kernel says it died.

    The job is retried while attempts remain (and then runs here), else fails
    as interrupted.
    """
    caplog.set_level(logging.WARNING, logger="jobtable")
    runner = jobtable.Runner(store, name="new", workers=1, lease=30.0, poll_interval=0.05)
    kind = runner.register("echo", echo)
    job_id = kind.enqueue(7, max_attempts=attempts)
    assert register_and_claim(store, "crashed", reused_pid()) == [job_id]
    await runner.start()
    try:
        await wait_until(lambda: kind.get(job_id).status is status)
        job = kind.get(job_id)
        if status is jobtable.Status.FAILED:
            assert job.error == jobtable.MESSAGE_INTERRUPTED
        else:
            assert job.result == 7
        assert not registered(store, "crashed")
        [warning] = [r for r in caplog.records if GONE in r.getMessage()]
        # It says what becomes of them: the job was retried, or failed after its last attempt.
        assert warning.getMessage().endswith(INTERRUPTED_FATE)
        assert "retried while attempts remain" in INTERRUPTED_FATE
    finally:
        runner.stop()
        await runner.wait()


@pytest.mark.parametrize(
    "who",
    [pytest.param(me, id="alive"), pytest.param(lambda: None, id="unknown")],
)
async def test_a_start_leaves_the_jobs_of_a_live_or_unknown_process_to_its_lease(
    store: jobtable.Store, who: Callable[[], ProcessId | None]
) -> None:
    runner = jobtable.Runner(store, name="new", workers=1, lease=30.0)
    kind = runner.register("echo", echo)
    job_id = kind.enqueue(7)
    assert register_and_claim(store, "peer", who()) == [job_id]
    await runner.start()
    try:
        assert kind.get(job_id).status is jobtable.Status.RUNNING
        assert registered(store, "peer")
    finally:
        runner.stop()
        await runner.wait()


async def test_a_start_leaves_another_hosts_runner_to_its_lease(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, name="new", workers=1, lease=30.0)
    kind = runner.register("echo", echo)
    job_id = kind.enqueue(7)
    elsewhere = ProcessId("another-boot pid:[1]", reused_pid().process)
    assert register_and_claim(store, "remote", elsewhere) == [job_id]
    await runner.start()
    try:
        assert kind.get(job_id).status is jobtable.Status.RUNNING
    finally:
        runner.stop()
        await runner.wait()


async def test_a_runner_that_registered_again_under_the_name_keeps_its_jobs(
    store: jobtable.Store,
) -> None:
    """The row names the process that is gone no more: the name's jobs are the new process's."""
    dead = reused_pid()
    register_and_claim(store, "slot-1", dead)
    kind = jobtable.Kind("echo", int, int)
    job_id = kind.enqueue(store, 7)
    assert register_and_claim(store, "slot-1", me()) == [job_id]
    op = EndGoneRunners(dead.host, [Peer("slot-1", dead.process)], store.clock)
    assert store.engine.write(op) == (0, [])
    assert kind.get(store, job_id).status is jobtable.Status.RUNNING
    assert registered(store, "slot-1")


# What a live runner's process watch does between heartbeats.


@pytest.mark.slow
@pytest.mark.parametrize("told", [True, False], ids=["pidfd", "probing"])
async def test_a_live_runner_interrupts_a_killed_peers_jobs_between_heartbeats(
    store: jobtable.Store,
    child: subprocess.Popen[bytes],
    wait_until: WaitUntil,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    told: bool,
) -> None:
    """The peer is a process of this host; it is killed after the live runner started.

    The lease is a minute and heartbeats come every 20 s, so neither
    explains the interruption within 10 s: only the watch, told by the
    kernel (a pidfd), or where it cannot be told (probing), probing the
    peer's process every PROBE_INTERVAL.
    """
    if not told:
        monkeypatch.setattr(process_watch, "_open_pidfd", lambda process: None)
    caplog.set_level(logging.WARNING, logger="jobtable")
    lease = 60.0
    runner = jobtable.Runner(store, name="live", workers=1, lease=lease)
    kind = runner.register("echo", echo)
    job_id = kind.enqueue(7)
    peer = ProcessId(me().host, f"{child.pid} {started_ticks(child.pid)}")
    assert register_and_claim(store, "peer", peer) == [job_id]
    await runner.start()
    try:
        assert kind.get(job_id).status is jobtable.Status.RUNNING
        child.kill()
        child.wait()
        await wait_until(lambda: kind.get(job_id).status is jobtable.Status.FAILED, limit=lease / 6)
        assert kind.get(job_id).error == jobtable.MESSAGE_INTERRUPTED
        assert not registered(store, "peer")
        # Logged once the write's reply is back on the loop: maybe after the job was seen failed.
        await wait_until(lambda: any(GONE in r.getMessage() for r in caplog.records))
    finally:
        runner.stop()
        await runner.wait()


async def test_a_runner_records_its_own_process(store: jobtable.Store) -> None:
    runner = jobtable.Runner(store, name="self", workers=1)
    runner.register("echo", echo)
    await runner.start()
    try:
        rows = store.engine.read(lambda q: q.list_runners_on_host(host=me().host, name="x"))
        assert [(r.name, r.process) for r in rows] == [("self", me().process)]
    finally:
        runner.stop()
        await runner.wait()
