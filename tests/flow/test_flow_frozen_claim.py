"""A runner process frozen inside a limited claim, on PostgreSQL, where the claim locks a row.

A claim of a queue with a limit locks the queue's row until its transaction
ends (postgres/queries/flow.sql says why). The worker (flow_worker.py,
queue ``work`` with ``concurrency=3``) is stopped with SIGSTOP while it
holds that lock: the test holds the row first, so the worker's claim waits
for it; the worker is stopped while it waits; the test lets go, and the
worker's session takes the lock and then waits for a client that cannot
answer. The server ends that session within the engine's idle bound, so
another runner starts and claims the queue, and the frozen one, once
continued, retries its claim and fails no job.
"""

import asyncio
import os
import pathlib
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
import pytest

import jobtable
from jobtable._engines.postgres.engine import IDLE_IN_TRANSACTION_TIMEOUT

pytestmark = pytest.mark.slow

WaitUntil = Callable[..., Awaitable[None]]
WORKER = pathlib.Path(__file__).with_name("flow_worker.py")
STEP = jobtable.Kind("step", dict[str, object], int, queue="work")
MARGIN = 30.0
"""Seconds allowed beyond the idle bound for processes to start and claim on a busy machine."""


def with_application_name(url: str, name: str) -> str:
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query, keep_blank_values=True), ("application_name", name)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def scalar(url: str, query: str, *params: object) -> object:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def sessions(url: str, application_name: str, where: str) -> int:
    """Counts the sessions of application_name that match the condition where."""
    found = scalar(
        url,
        f"SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND {where}",
        application_name,
    )
    assert isinstance(found, int)
    return found


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat", encoding="ascii") as file:
        return file.read().rsplit(")", 1)[1].split()[0] in ("T", "t")


@pytest.fixture
def spawn(tmp_path: pathlib.Path) -> Iterator[Callable[[str, str], subprocess.Popen[bytes]]]:
    """Starts flow_worker.py processes (mode global, 2 workers), logging to NAME.log."""
    started: list[subprocess.Popen[bytes]] = []

    def start(target: str, name: str) -> subprocess.Popen[bytes]:
        attempts = str(tmp_path / "attempts")
        args = [sys.executable, str(WORKER), target, name, "2", attempts, "global"]
        with (tmp_path / f"{name}.log").open("ab") as log:
            process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGCONT)
            process.send_signal(signal.SIGTERM)
    for process in started:
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for log in sorted(tmp_path.glob("*.log")):
        print(f"--- {log.name} ---\n{log.read_text(encoding='utf-8', errors='replace')}")


async def freeze_inside_its_claim(
    process: subprocess.Popen[bytes],
    store: jobtable.Store,
    url: str,
    name: str,
    wait_until: WaitUntil,
) -> None:
    """Stops process (sessions named name) so that it holds the lock of queue work's row."""
    with psycopg.connect(url) as holder:
        holder.execute("SELECT 1 FROM queues WHERE name = 'work' FOR UPDATE")
        # The enqueue wakes the worker, whose limited claim waits for the row.
        STEP.enqueue(store, {"pause": 0.01})
        await wait_until(
            lambda: sessions(url, name, "wait_event_type = 'Lock'") == 1, limit=60, interval=0.02
        )
        os.kill(process.pid, signal.SIGSTOP)
        await wait_until(lambda: stopped(process.pid), limit=5, interval=0.005)
    # The holder committed: the frozen worker's session takes the row and
    # waits, inside its transaction, for a statement that does not come.
    await wait_until(
        lambda: sessions(url, name, "state = 'idle in transaction'") == 1,
        limit=IDLE_IN_TRANSACTION_TIMEOUT,
        interval=0.005,
    )


def succeeded(store: jobtable.Store, ids: list[str]) -> Callable[[], bool]:
    return lambda: all(store.get(i).status is jobtable.Status.SUCCEEDED for i in ids)


def runners(url: str, ids: list[str]) -> set[str]:
    """The runners that ran the jobs ids."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT DISTINCT runner FROM jobs WHERE id = ANY(%s)", (ids,))
        return {row[0] for row in rows.fetchall()}


def log(tmp_path: pathlib.Path, name: str) -> str:
    return (tmp_path / f"{name}.log").read_text(encoding="utf-8", errors="replace")


async def test_a_runner_frozen_inside_a_limited_claim_blocks_others_only_for_the_idle_bound(
    pg_url: str,
    spawn: Callable[[str, str], subprocess.Popen[bytes]],
    tmp_path: pathlib.Path,
    wait_until: WaitUntil,
) -> None:
    name = f"jobtable-frozen-{secrets.token_hex(4)}"
    with jobtable.Store.open(pg_url) as store:
        frozen = spawn(with_application_name(pg_url, name), "frozen")
        await wait_until(
            lambda: scalar(pg_url, "SELECT count(*) FROM queues WHERE concurrency = 3") == 1,
            limit=60,
        )
        await freeze_inside_its_claim(frozen, store, pg_url, name, wait_until)
        frozen_at = time.monotonic()

        # A runner that starts now declares the queue's limits (a write of the
        # locked row) and claims the queue (a lock of it): within the bound.
        other = spawn(pg_url, "other")
        ids = STEP.enqueue_many(store, [{"pause": 0.01} for _ in range(6)])
        await wait_until(
            succeeded(store, ids), limit=IDLE_IN_TRANSACTION_TIMEOUT + MARGIN, interval=0.05
        )
        blocked_for = time.monotonic() - frozen_at
        assert runners(pg_url, ids) == {"other"}
        assert stopped(frozen.pid), "the frozen runner stayed stopped meanwhile"
        assert sessions(pg_url, name, "state = 'idle in transaction'") == 0

        # Continued, the frozen runner finds its session ended, claims again,
        # and runs the jobs enqueued once the other runner is gone.
        os.kill(frozen.pid, signal.SIGCONT)
        await wait_until(lambda: "claim jobs; retrying" in log(tmp_path, "frozen"), limit=60)
        other.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(other.wait, 30) == 0
        later = STEP.enqueue_many(store, [{"pause": 0.01} for _ in range(6)])
        await wait_until(succeeded(store, later), limit=60, interval=0.05)
        assert runners(pg_url, later) == {"frozen"}
        assert frozen.poll() is None, "the frozen runner carries on"
        unfinished = scalar(pg_url, "SELECT count(*) FROM jobs WHERE status <> 'succeeded'")
        retried = scalar(pg_url, "SELECT count(*) FROM jobs WHERE attempt <> 1")
        assert (unfinished, retried) == (0, 0), "no job failed or ran twice"
    print(f"the queue was blocked {blocked_for:.1f} s (bound {IDLE_IN_TRANSACTION_TIMEOUT} s)")
