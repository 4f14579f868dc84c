"""``jobtable health``: a probe whose exit status says whether the runners claim.

Each command runs as orchestrators run it, the console script in a process
of its own, judged by its exit status and what it prints.
"""

import asyncio
import datetime
import json
import pathlib

import pytest
from test_cli import Cli, cli, one_line_error, output, run_cli

import jobtable

pytestmark = pytest.mark.slow
__all__ = ["cli"]  # the fixture, used by name

ping = jobtable.Kind("ping", int, int, queue="mail")


def test_no_jobs_due_is_healthy(store: jobtable.Store, cli: Cli) -> None:
    assert output(cli("health")).startswith("healthy: 0 live runner(s)")


def test_jobs_due_with_no_live_runner_are_unhealthy(store: jobtable.Store, cli: Cli) -> None:
    ping.enqueue(store, 1)
    result = cli("health")
    assert result.returncode == 1
    [line] = result.stdout.splitlines()
    assert line.startswith("queue mail: 1 due job(s), the oldest due for ")
    assert line.endswith("and no runner is alive")


def test_max_wait_is_unhealthy_once_the_oldest_due_job_waited_longer(
    store: jobtable.Store, cli: Cli
) -> None:
    an_hour_ago = store.clock() - datetime.timedelta(hours=1)
    ping.enqueue(store, 1, run_at=an_hour_ago)
    result = cli("health", "--max-wait", "30m", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["healthy"] is False
    assert report["problems"][1].startswith("queue mail: its oldest due job waited 1h")
    assert report["problems"][1].endswith("over --max-wait 30m")
    assert report["health"]["queues"][0]["due"] == 1
    assert cli("health", "--max-wait", "2h", "--runner", "nobody").returncode == 1
    assert "--max-wait" in one_line_error(cli("health", "--max-wait", "soon"))


async def test_runner_is_healthy_while_it_heartbeats_and_not_once_stopped(
    store: jobtable.Store, store_target: str
) -> None:
    runner = jobtable.Runner(store, name="probe-1", queues={"mail": 1})

    @runner.handler(ping)
    def handle(ctx: jobtable.JobContext[int], payload: int) -> int:
        return payload

    await runner.start()
    try:
        alive = await asyncio.to_thread(
            run_cli, "health", "--runner", "probe-1", "--store", store_target
        )
        past_lease = await asyncio.to_thread(
            run_cli, "health", "--runner", "probe-1", "--lease", "0.001", "--store", store_target
        )
        other = await asyncio.to_thread(
            run_cli, "health", "--runner", "probe-2", "--store", store_target
        )
    finally:
        runner.stop()
        await runner.wait()
    stopped = await asyncio.to_thread(
        run_cli, "health", "--runner", "probe-1", "--store", store_target
    )
    assert output(alive) == "healthy: runner probe-1 is alive\n"
    assert past_lease.returncode == 1
    assert past_lease.stdout.startswith("runner probe-1: no heartbeat within the lease")
    assert other.returncode == 1
    assert other.stdout.startswith("runner probe-2: not registered")
    assert stopped.returncode == 1


def test_health_of_a_missing_store_is_a_one_line_error(tmp_path: pathlib.Path) -> None:
    error = one_line_error(run_cli("health", "--store", str(tmp_path / "none.db")))
    assert "migrate" in error
