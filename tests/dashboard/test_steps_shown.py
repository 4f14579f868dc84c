"""A job's recorded steps as operators see them: the record, ``jobtable jobs show``, the dashboard.

Each shows the step's name, the attempt that ran it and its output as
stored (secrets masked), never anything of the handler's exceptions.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest
from dashboard_server import Client, serve
from pydantic import BaseModel

import jobtable
from jobtable.testing import drain

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
NASTY = "<script>alert(1)</script>"


class Rows(BaseModel):
    count: int
    note: str


report = jobtable.Kind("report", int, int, max_attempts=2)


async def stepped_job(store: jobtable.Store) -> str:
    """A job whose step "load" ran at attempt 1, which then failed; attempt 2 succeeded."""
    runner = jobtable.Runner(store, workers=1)

    def load(n: int) -> Rows:
        return Rows(count=n, note=NASTY)

    @runner.handler(report)
    async def run(ctx: jobtable.JobContext[int], payload: int) -> int:
        rows = await ctx.step("load", load, payload)
        if ctx.attempt == 1:
            raise RuntimeError("the first attempt fails after its step")
        return rows.count

    job_id = report.enqueue(store, 5)
    await drain(runner)
    return job_id


async def test_the_record_holds_the_steps_and_a_listing_leaves_them_out(
    store: jobtable.Store,
) -> None:
    job_id = await stepped_job(store)
    [step] = store.inspect(job_id).steps
    assert (step.name, step.attempt, step.output) == ("load", 1, {"count": 5, "note": NASTY})
    assert step.recorded_at.tzinfo is not None
    assert (await store.ainspect(job_id)).steps == [step]
    [listed] = store.list_jobs()
    assert listed.steps == []


@pytest.mark.slow
async def test_jobs_show_prints_the_steps(store: jobtable.Store, store_target: str) -> None:
    job_id = await stepped_job(store)
    environ = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    environ["COLUMNS"] = "200"

    def show(*args: str) -> str:
        done = subprocess.run(
            [str(SCRIPT), "jobs", "show", job_id, *args, "--store", store_target],
            capture_output=True,
            text=True,
            env=environ,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    human = show()
    [line] = [ln for ln in human.splitlines() if ln.startswith("│ load ")]
    assert line.split("│")[2].strip() == "1"
    assert '{"count": 5, "note": "<script>alert(1)</script>"}' in line
    shown = json.loads(show("--json"))
    assert [(s["name"], s["attempt"], s["output"]["count"]) for s in shown["steps"]] == [
        ("load", 1, 5)
    ]


async def test_the_dashboard_job_page_lists_the_steps(store: jobtable.Store) -> None:
    job_id = await stepped_job(store)
    plain = report.enqueue(store, 1)
    with serve(jobtable.dashboard(store)) as base:
        client = Client(base)
        page = client.get(f"/jobs/{job_id}").text
        other = client.get(f"/jobs/{plain}").text
    assert "<h2>Steps</h2>" in page
    assert "<td>load</td>" in page
    assert NASTY not in page
    assert "&lt;script&gt;" in page
    assert "<h2>Steps</h2>" not in other
