"""Crashed, stopped and cut-off worker processes: what the process evidence decides, and what not.

Each worker is ``fault_worker.py``, a real ``Runner.run()`` in a process of
its own on this host (see test_faults.py, whose helpers these tests share).
The runners' lease is 30 s here, the default, so that an interruption within
a fraction of it can only come from the process evidence: a runner of the
same host whose process is gone is dead at once. A process that still
exists is not: stopped past its lease (the lease rule applies), cut off
from the server, or through a server restart.
"""

import asyncio
import contextlib
import pathlib
import secrets
import signal
import socket
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import pg_cluster
import pytest
from test_faults import (
    FENCED,
    LEASE_LOST,
    LISTEN_BACK,
    LISTEN_DOWN,
    Spawner,
    WaitUntil,
    client,
    count,
    exit_code,
    is_postgres,
    job_row,
    pause_outside_transaction,
    runs,
    select,
    spawner,
    stop_gracefully,
    wait_for_server,
    with_query,
)

import jobtable

pytestmark = pytest.mark.slow

__all__ = ["spawner"]  # the fixture, imported for these tests

LEASE = 30.0
"""The workers' lease: the default, far longer than any process evidence takes."""

GONE = "jobs of runners whose process ended"
DEAD = "jobs of dead runners"

HELD = "SELECT id FROM jobs WHERE status = 'running' AND runner = ? AND result IS NOT NULL"
"""The jobs a worker started with --publish holds: its handler published."""


async def held_by(target: str, name: str, jobs: int, wait_until: WaitUntil) -> list[str]:
    """Waits until worker name's handlers hold jobs jobs; returns their ids."""
    await wait_until(lambda: len(select(target, HELD, name)) == jobs, limit=60, interval=0.05)
    return sorted(row[0] for row in select(target, HELD, name))


async def registered(target: str, name: str, wait_until: WaitUntil) -> None:
    """Waits until worker name has started: its runner is registered."""
    await wait_until(
        lambda: bool(select(target, "SELECT 1 FROM runners WHERE name = ?", name)),
        limit=60,
        interval=0.05,
    )


# SIGKILL: the process is gone.


async def test_a_killed_workers_jobs_are_interrupted_by_its_restart_under_a_new_name(
    engine: str,
    store: jobtable.Store,
    store_target: str,
    spawner: Spawner,
    wait_until: WaitUntil,
) -> None:
    """The restarted process's start interrupts them, though the dead name's lease holds.

    One job has a second attempt (it runs again, in the new process), the
    other fails as interrupted.
    """
    parent = client(store)
    retried = parent.work.enqueue(0.05, max_attempts=2)
    failed = parent.work.enqueue(0.05)
    old = spawner.start(store_target, "w-old", lease=LEASE, extra=["--hold", "--publish"])
    assert await held_by(store_target, "w-old", 2, wait_until) == sorted([retried, failed])
    old.process.kill()
    assert await exit_code(old) == -signal.SIGKILL
    killed_at = time.monotonic()
    new = spawner.start(store_target, "w-new", lease=LEASE)

    def recovered() -> bool:
        return (parent.work.get(failed).status, parent.work.get(retried).status) == (
            jobtable.Status.FAILED,
            jobtable.Status.SUCCEEDED,
        )

    await wait_until(recovered, limit=LEASE / 2, interval=0.02)
    recovered_in = time.monotonic() - killed_at
    assert parent.work.get(failed).error == jobtable.MESSAGE_INTERRUPTED
    assert parent.work.get(retried).result == "w-new"
    ran = {job: sorted(pids) for job, pids in runs(spawner).items()}
    assert ran == {failed: [old.pid], retried: sorted([old.pid, new.pid])}
    await wait_until(lambda: GONE in new.log(), limit=30)
    await stop_gracefully(new)
    print(
        f"{engine}: killed worker's jobs recovered {recovered_in:.2f} s after SIGKILL by its "
        f"restart under a new name, including the new process's start-up (lease {LEASE} s)"
    )


async def test_a_killed_workers_jobs_are_interrupted_by_a_live_peer_within_a_second_or_so(
    engine: str,
    store: jobtable.Store,
    store_target: str,
    spawner: Spawner,
    wait_until: WaitUntil,
) -> None:
    """The peer's process watch sees the process gone between its heartbeats (every 10 s)."""
    parent = client(store)
    held = parent.work.enqueue_many([0.05] * 2)
    victim = spawner.start(store_target, "w0", lease=LEASE, extra=["--hold", "--publish"])
    assert await held_by(store_target, "w0", 2, wait_until) == sorted(held)
    peer = spawner.start(store_target, "w1", lease=LEASE)
    await registered(store_target, "w1", wait_until)
    victim.process.kill()
    assert await exit_code(victim) == -signal.SIGKILL
    killed_at = time.monotonic()

    def interrupted() -> bool:
        return all(parent.work.get(i).status is jobtable.Status.FAILED for i in held)

    await wait_until(interrupted, limit=LEASE / 3, interval=0.01)
    recovered_in = time.monotonic() - killed_at
    for job_id in held:
        job = parent.work.get(job_id)
        assert (job.error, job.result) == (jobtable.MESSAGE_INTERRUPTED, f"w0 {victim.pid}")
    # Logged once the write's reply is back: maybe after the parent saw the jobs failed.
    await wait_until(lambda: GONE in peer.log(), limit=30)
    assert DEAD not in peer.log(), "the lease did not decide"
    assert runs(spawner) == {job_id: [victim.pid] for job_id in held}
    await stop_gracefully(peer)
    print(
        f"{engine}: killed worker's jobs interrupted {recovered_in:.2f} s after SIGKILL by a "
        f"live peer of the same host (lease {LEASE} s, heartbeat every {LEASE / 3:.0f} s)"
    )


# SIGSTOP: the process exists, so the lease decides.


async def test_a_worker_stopped_past_its_lease_loses_its_job_and_on_resume_runs_nothing_twice(
    engine: str,
    store: jobtable.Store,
    store_target: str,
    spawner: Spawner,
    wait_until: WaitUntil,
    tmp_path: pathlib.Path,
) -> None:
    """A stopped process is not gone: its job is retried elsewhere only once its lease expired.

    Lease 1 s here. The live peer fails the stopped worker's attempt by the
    lease rule and runs the job's second attempt. On SIGCONT the stopped
    worker's handler carries on to its end (a process cannot be made to
    forget what it was doing), but its publish and its result are refused,
    and it claims nothing again: the job has one outcome, the second
    attempt's, and ran once per attempt.
    """
    lease = 1.0
    gate = tmp_path / "gate"
    application_name = f"jobtable-fault-{secrets.token_hex(4)}"
    worker_target = store_target
    if is_postgres(store_target):
        worker_target = with_query(store_target, "application_name", application_name)
    parent = client(store)
    job_id = parent.fence.enqueue(0, max_attempts=2)
    gated = ["--gate", str(gate)]
    stopped = spawner.start(worker_target, "stopped", workers=1, lease=lease, extra=gated)
    await wait_until(lambda: parent.fence.get(job_id).result == "started", limit=60)
    await pause_outside_transaction(stopped, store_target, application_name)
    try:
        live = spawner.start(store_target, "live", workers=1, lease=lease, extra=gated)
        await wait_until(
            lambda: job_row(store_target, job_id)[3:5] == ("live", 2), limit=30, interval=0.02
        )
    finally:
        gate.touch()
        stopped.process.send_signal(signal.SIGCONT)
    await wait_until(lambda: FENCED in stopped.log(), limit=30, interval=0.05)
    await wait_until(lambda: parent.fence.get(job_id).status is jobtable.Status.SUCCEEDED, limit=30)
    assert f"fence {job_id}: late publish refused" in stopped.log()
    assert f"fence {job_id}: late publish accepted" in live.log()
    assert job_row(store_target, job_id)[:5] == (
        "succeeded",
        '"late result"',
        None,
        "live",
        2,
    )
    await wait_until(lambda: LEASE_LOST in stopped.log(), limit=30, interval=0.05)
    for worker in (stopped, live):
        assert GONE not in worker.log(), "a stopped process is not gone"
        await stop_gracefully(worker)
    assert sorted(runs(spawner)[job_id]) == sorted([stopped.pid, live.pid])


# PostgreSQL: sessions end, processes do not.


async def test_a_postgres_restart_with_every_worker_alive_fails_nothing(
    throwaway_pg: pg_cluster.Cluster, spawner: Spawner, wait_until: WaitUntil
) -> None:
    """Every session ends at a server restart; no runner takes that for its peers' death."""
    pg_url = throwaway_pg.url
    with jobtable.Store.open(pg_url) as store:
        client(store).work.enqueue_many([0.05] * 2)
    workers = [
        spawner.start(pg_url, f"w{i}", workers=1, lease=LEASE, extra=["--hold", "--publish"])
        for i in (0, 1)
    ]
    held = {w.name: await held_by(pg_url, w.name, 1, wait_until) for w in workers}
    await asyncio.to_thread(throwaway_pg.restart, "fast")
    await wait_for_server(pg_url)
    for worker in workers:
        await wait_until(lambda w=worker: LISTEN_BACK in w.log(), limit=60, interval=0.05)
    # Several of the watch's probes, and a heartbeat of each worker.
    await asyncio.sleep(LEASE / 3 + 1)
    for worker in workers:
        assert worker.process.poll() is None, f"{worker.name} died:\n{worker.log()}"
        assert select(pg_url, HELD, worker.name) == [(held[worker.name][0],)]
        assert GONE not in worker.log()
        assert DEAD not in worker.log()
    assert count(pg_url, "failed") == 0
    for worker in workers:
        await stop_gracefully(worker)
    assert count(pg_url, "succeeded") == 2


class Proxy:
    """A TCP proxy to the PostgreSQL server that the test can cut: its sessions end at once.

    cut closes every connection through it, on both sides, and refuses new
    ones until restore: to the server, the client's session ended; to the
    client, the server went away.
    """

    def __init__(self, server: tuple[str, int]) -> None:
        self._server = server
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._refusing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client_side, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._refusing:
                    client_side.close()
                    continue
                server_side = socket.create_connection(self._server)
                self._open += [client_side, server_side]
            for a, b in ((client_side, server_side), (server_side, client_side)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        with self._lock:
            self._refusing = True
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open = []

    def restore(self) -> None:
        with self._lock:
            self._refusing = False

    def close(self) -> None:
        self.cut()
        self._listener.close()


@pytest.fixture
def proxy(pg_url: str) -> Iterator[Proxy]:
    parts = urlsplit(pg_url)
    cut = Proxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    try:
        yield cut
    finally:
        cut.close()


def through(url: str, proxy: Proxy) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) > 1 else host))


async def test_a_worker_cut_off_from_the_server_keeps_its_job_while_its_lease_holds(
    pg_url: str, proxy: Proxy, spawner: Spawner, wait_until: WaitUntil
) -> None:
    """Its sessions end while the server runs, but a session's end is no evidence of death.

    The peer fails nothing while the cut worker's lease holds; once the
    connection is back, the cut worker finishes its job, which ran once. (A
    cut longer than the lease ends as a silent host's: the peer fails its
    jobs by the lease rule, and the cut worker's late writes are refused.)
    """
    application_name = f"jobtable-cut-{secrets.token_hex(4)}"
    cut_url = with_query(through(pg_url, proxy), "application_name", application_name)
    store = jobtable.Store.open(pg_url)
    try:
        job_id = client(store).work.enqueue(0.05)
        worker = spawner.start(cut_url, "cut", workers=1, lease=LEASE, extra=["--hold"])
        holding = ("running", None, None, "cut", 1)
        await wait_until(lambda: job_row(pg_url, job_id)[:5] == holding, limit=60)
        peer = spawner.start(pg_url, "peer", workers=1, lease=LEASE)
        await registered(pg_url, "peer", wait_until)
        proxy.cut()
        sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?"
        await wait_until(lambda: select(pg_url, sessions, application_name) == [(0,)], limit=30)
        await wait_until(lambda: LISTEN_DOWN in worker.log(), limit=30)
        # Many times the watch's probe interval.
        await asyncio.sleep(3.0)
        assert job_row(pg_url, job_id)[:5] == holding
        proxy.restore()
        await wait_until(lambda: LISTEN_BACK in worker.log(), limit=60, interval=0.05)
        await stop_gracefully(worker)
        job = store.get(job_id)
        assert (job.status, job.result) == (jobtable.Status.SUCCEEDED, "cut")
        assert GONE not in peer.log()
        assert DEAD not in peer.log()
        assert runs(spawner) == {job_id: [worker.pid]}
        await stop_gracefully(peer)
    finally:
        store.close()
