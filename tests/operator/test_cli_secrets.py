"""``jobtable secrets`` and the job commands on payloads with secrets, as real processes."""

import asyncio
import base64
import json
import os
import pathlib
import subprocess
import sys

import pydantic
import pytest

import jobtable
from jobtable.testing import drain

SCRIPT = pathlib.Path(sys.executable).with_name("jobtable")
PLANTED = "planted-token-cli-6e3b"
K1 = "k1:" + base64.b64encode(bytes(range(32))).decode()
K2 = "k2:" + base64.b64encode(bytes(range(32, 64))).decode()

pytestmark = pytest.mark.slow


class Call(pydantic.BaseModel):
    url: str
    api_token: pydantic.SecretStr


calls = jobtable.Kind("call", Call, str)


def run_cli(*args: str, keys: str | None) -> subprocess.CompletedProcess[str]:
    """Runs the console script with JOBTABLE_SECRET_KEYS set to keys (unset for None)."""
    environ = {
        k: v for k, v in os.environ.items() if k not in ("JOBTABLE_STORE", "JOBTABLE_SECRET_KEYS")
    }
    if keys is not None:
        environ["JOBTABLE_SECRET_KEYS"] = keys
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=environ, timeout=120
    )


def test_the_job_commands_show_secrets_masked(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        job_id = calls.enqueue(store, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
    for args in (("jobs", "show", job_id), ("jobs", "show", job_id, "--json"), ("jobs", "list")):
        result = run_cli(*args, "--store", store_target, keys=K1)
        assert result.returncode == 0, result.stderr
        assert PLANTED not in result.stdout + result.stderr
    shown = run_cli("jobs", "show", job_id, "--json", "--store", store_target, keys=None)
    assert json.loads(shown.stdout)["payload"] == {"url": "u", "api_token": "**********"}


def test_secrets_rotate_reencrypts_under_the_first_key(store_target: str) -> None:
    with jobtable.Store.open(store_target, secret_keys=K1) as store:
        job_id = calls.enqueue(store, Call(url="u", api_token=pydantic.SecretStr(PLANTED)))
    rotated = run_cli("secrets", "rotate", "--json", "--store", store_target, keys=f"{K2},{K1}")
    assert rotated.returncode == 0, rotated.stderr
    assert json.loads(rotated.stdout) == {"resealed": 1, "key": "k2"}
    # Only k2 is needed now.
    received: list[str] = []
    with jobtable.Store.open(store_target, secret_keys=K2) as store:
        runner = jobtable.Runner(store, workers=1)

        @runner.handler(calls)
        async def call(ctx: jobtable.JobContext[str], payload: Call) -> str:
            received.append(payload.api_token.get_secret_value())
            return "done"

        asyncio.run(drain(runner))
        assert store.get(job_id).status is jobtable.Status.SUCCEEDED
    assert received == [PLANTED]


def test_secrets_rotate_without_a_key_says_how_to_set_one(tmp_path: pathlib.Path) -> None:
    jobtable.Store.open(tmp_path / "jobs.db").close()
    result = run_cli("secrets", "rotate", "--store", str(tmp_path / "jobs.db"), keys=None)
    assert result.returncode == 1
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("jobtable: error: rotate_secrets: no secret key is configured")
    assert "JOBTABLE_SECRET_KEYS" in line


def test_secrets_new_key_prints_a_key_a_store_takes(tmp_path: pathlib.Path) -> None:
    result = run_cli("secrets", "new-key", "2026-06", keys=None)
    assert result.returncode == 0, result.stderr
    key = result.stdout.strip()
    assert key.startswith("2026-06:")
    with jobtable.Store.open(tmp_path / "jobs.db", secret_keys=key) as store:
        assert store.secret_keys is not None
        assert store.secret_keys.ids == ("2026-06",)
    bad = run_cli("secrets", "new-key", "no spaces", keys=None)
    assert bad.returncode == 1
    assert "want 1 to 32 of" in bad.stderr
