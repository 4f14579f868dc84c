"""examples/steps.py runs as a user runs it: the retry resumes after the recorded step.

Its first attempt charges the card, then fails on the email; the retry gets
the charge back from the recorded step and only sends the email. The mail
server's error text reaches the log, never the database file.
"""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "steps.py"


@pytest.mark.slow
def test_the_steps_example_resumes_after_the_recorded_step(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "steps.db"
    environ = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(path)],
        capture_output=True,
        text=True,
        env=environ,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "attempt 2 resumes after stage 'charged'",
        "job succeeded after 2 attempts: "
        "{'stage': 'done', 'charge_id': 'ch_A-17_4200', 'emailed': True}",
        "attempt 1 failed: internal error",
        "step 'charge' ran at attempt 1: ch_A-17_4200",
        "step 'email' ran at attempt 2: True",
        "step functions called: charge, email, email",
    ]
    assert "smtp.example: the server hung up" in done.stderr
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("steps.db*"))
    assert b"smtp.example" not in stored
