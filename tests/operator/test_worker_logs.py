"""``jobtable worker --log-format json``: one JSON object per line, naming the job."""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

import jobtable

pytestmark = pytest.mark.slow

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
ping = jobtable.Kind("ping", int, int)


def app_module(folder: pathlib.Path) -> None:
    """Writes app.py: a runner whose handler fails once for a negative payload."""
    (folder / "app.py").write_text(
        "import os\n"
        "import jobtable\n"
        "store = jobtable.Store.open(os.environ['APP_STORE'])\n"
        "runner = jobtable.Runner(store, workers=1, name='json-logs', poll_interval=0.05)\n"
        "ping = jobtable.Kind('ping', int, int)\n"
        "@runner.handler(ping)\n"
        "async def handle(ctx: jobtable.JobContext[int], payload: int) -> int:\n"
        "    if payload < 0:\n"
        "        raise RuntimeError('upstream refused')\n"
        "    return payload\n"
    )


def test_json_logs_are_one_object_a_line_with_the_jobs_fields(
    store: jobtable.Store, store_target: str, tmp_path: pathlib.Path
) -> None:
    app_module(tmp_path)
    bad = ping.enqueue(store, -1, max_attempts=1)
    env = {k: v for k, v in os.environ.items() if k != "JOBTABLE_STORE"}
    env["APP_STORE"] = store_target
    worker = subprocess.Popen(
        [str(SCRIPT), "worker", "app:runner", "--log-format", "json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        start = time.monotonic()
        while store.get(bad).status != jobtable.Status.FAILED:
            assert time.monotonic() - start < 60, "the worker never ran the job"
            assert worker.poll() is None, worker.communicate()
            time.sleep(0.05)
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=60)
    records = [json.loads(line) for line in err.splitlines()]
    assert all({"time", "level", "logger", "message"} <= record.keys() for record in records)
    [failed] = [r for r in records if r.get("job_id") == bad and "exception" in r]
    assert (failed["kind"], failed["attempt"], failed["level"]) == ("ping", 1, "ERROR")
    assert "upstream refused" in failed["exception"]
    assert any(r["message"].startswith("runner started") for r in records)


def test_an_unknown_log_format_is_a_one_line_error(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(
        [str(SCRIPT), "worker", "app:runner", "--log-format", "xml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == "jobtable: error: --log-format 'xml': want text or json"
