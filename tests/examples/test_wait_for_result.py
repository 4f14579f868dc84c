"""examples/wait_for_result.py runs as a user runs it, on both engines, and prints its story."""

import pathlib
import subprocess
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "wait_for_result.py"


@pytest.mark.slow
def test_the_wait_example_prints_results_stored_failures_and_a_timeout(store_target: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), store_target],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "quoted: tea, 500 cents",
        "quoted together: cup 250, pot 250",
        "failed, as stored: 'The quantity must be at least 1.'",
        "failed, as stored: 'internal error'",
        "still queued after 0.2 s",
    ]
    assert "4111" not in done.stdout
