"""The dashboard's job page shows a workflow job's links, and cancels a pending job."""

import pathlib
import sys
from collections.abc import Iterator

import pytest

import jobtable

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "dashboard"))
from dashboard_server import Client, serve

ping = jobtable.Kind("ping", int, int)


@pytest.fixture
def sqlite_store(tmp_path: pathlib.Path) -> Iterator[jobtable.Store]:
    with jobtable.Store.open(tmp_path / "jobs.db") as store:
        yield store


def test_the_job_page_shows_the_workflow_and_offers_cancel_of_a_pending_job(
    sqlite_store: jobtable.Store,
) -> None:
    wf = jobtable.Workflow("nightly")
    a = wf.add(ping, 1)
    b = wf.add(ping, 2, after=[a])
    wf.enqueue(sqlite_store)
    with serve(jobtable.dashboard(sqlite_store)) as base:
        page = Client(base).get(f"/jobs/{b.id}")
    assert page.status == 200
    assert "Workflow nightly" in page.text
    assert f"/jobs/{a.id}" in page.text
    assert 'class="status pending"' in page.text
    assert f"/jobs/{b.id}/cancel" in page.text
