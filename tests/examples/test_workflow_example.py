"""examples/workflow.py runs as a reader runs it, in a process of its own."""

import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "workflow.py"


def test_the_workflow_example_runs_the_crawl_and_its_report(tmp_path: pathlib.Path) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path / "workflow.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert 'report: {"statuses":{"succeeded":2,"cancelled":1},"words":8}' in done.stdout
    assert "parse of the broken page: cancelled (dependency " in done.stdout
