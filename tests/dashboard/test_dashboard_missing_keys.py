"""A runner that lacks a job's secret key reports its id: runners listing, CLI, dashboard.

The report belongs to the runner: its heartbeat records the ids on its row,
and a restart (a new registration of its name) clears them.
"""

import asyncio
import base64
import os
import pathlib
import subprocess
import sys

import pydantic
import pytest
from dashboard_server import Client, serve

import jobtable

pytestmark = pytest.mark.slow  # runs the console script

K1 = "k1:" + base64.b64encode(bytes(range(32))).decode()
K2 = "k2:" + base64.b64encode(bytes(range(32, 64))).decode()
SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")


class Call(pydantic.BaseModel):
    url: str
    api_token: pydantic.SecretStr


calls = jobtable.Kind("call", Call, str)


def keyed_runner(store: jobtable.Store) -> jobtable.Runner:
    """A runner named "keyed" that beats often, so its report shows within a second."""
    runner = jobtable.Runner(store, name="keyed", workers=1, poll_interval=0.05, lease=0.6)

    @runner.handler(calls)
    async def call(ctx: jobtable.JobContext[str], payload: Call) -> str:
        return "done"

    return runner


async def reported(store: jobtable.Store, keys: list[str]) -> jobtable.RunnerInfo:
    """The runner "keyed" once the listing reports keys as its missing ones; fails after 60 s."""
    for _ in range(1200):
        listed = [r for r in store.runners() if r.name == "keyed"]
        if listed and listed[0].missing_keys == keys:
            return listed[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"the listing never reported {keys}: {store.runners()}")


def cli_runners(target: str) -> str:
    """The output of ``jobtable runners`` on target, as an operator runs it."""
    environ = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    done = subprocess.run(
        [str(SCRIPT), "runners", "--store", target],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_a_runner_without_the_key_reports_its_id_until_it_restarts_with_it(
    store_target: str,
) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        job_id = calls.enqueue(store, Call(url="u", api_token=pydantic.SecretStr("t")))
    with jobtable.Store.open(store_target, secret_keys=K2) as store:
        runner = keyed_runner(store)
        await runner.start()
        try:
            info = await reported(store, ["k1"])
            assert info.alive
            shown = await asyncio.to_thread(cli_runners, store_target)
            assert "missing keys" in shown
            assert "k1" in shown
            with serve(jobtable.dashboard(store)) as base:
                page = await asyncio.to_thread(Client(base).get, "/")
        finally:
            runner.stop()
            await runner.wait()
        assert page.status == 200
        assert 'data-alarm="missing-keys" data-runner="keyed"' in page.text
        assert "lacks secret key k1." in page.text
        assert store.get(job_id).status is jobtable.Status.QUEUED
    # The same runner restarted with the key: its report clears, and it runs
    # the job once the put-back's wait (a second) has passed.
    with jobtable.Store.open(store_target, secret_keys=f"{K2},{K1}") as store:
        runner = keyed_runner(store)
        await runner.start()
        try:
            assert (await reported(store, [])).missing_keys == []
            for _ in range(1200):
                if store.get(job_id).status is jobtable.Status.SUCCEEDED:
                    break
                await asyncio.sleep(0.05)
            assert store.get(job_id).status is jobtable.Status.SUCCEEDED
            with serve(jobtable.dashboard(store)) as base:
                page = await asyncio.to_thread(Client(base).get, "/")
        finally:
            runner.stop()
            await runner.wait()
        assert 'data-alarm="missing-keys"' not in page.text
