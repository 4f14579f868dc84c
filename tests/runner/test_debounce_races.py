"""Concurrent debounced enqueues of one key keep one pending job, and every caller is told its id.

Processes, each with a store of its own, enqueue the same keys at the same
moment, on both engines: per key, one of them stores the job and every
other updates it (the database's partial unique index decides).
"""

import collections
import json
import pathlib
import subprocess
import sys

import pytest

import jobtable

pytestmark = pytest.mark.slow

bounce = jobtable.Kind("bounce", int, int)
RACER = pathlib.Path(__file__).with_name("debounce_racer.py")


def test_processes_debouncing_one_key_at_once_keep_one_job(
    store_target: str, engine: str, tmp_path: pathlib.Path
) -> None:
    processes, rounds = 4, 30
    jobtable.Store.open(store_target).close()  # the schema exists before they race
    go = tmp_path / "go"
    outs = [tmp_path / f"out-{i}.jsonl" for i in range(processes)]
    racers = [
        subprocess.Popen([sys.executable, str(RACER), store_target, str(rounds), str(go), str(out)])
        for out in outs
    ]
    try:
        go.touch()
        for racer in racers:
            assert racer.wait(timeout=120) == 0
    finally:
        for racer in racers:
            racer.kill()
            racer.wait()
    told: dict[int, list[jobtable.EnqueueResult]] = collections.defaultdict(list)
    for out in outs:
        for line in out.read_text(encoding="utf-8").splitlines():
            n, job_id, duplicate = json.loads(line)
            told[n].append(jobtable.EnqueueResult(job_id, duplicate))
    assert sorted(told) == list(range(rounds))
    with jobtable.Store.open(store_target) as store:
        jobs = store.list_jobs(kind="bounce", limit=1000)
        assert len(jobs) == rounds
        for n, results in told.items():
            assert len(results) == processes
            [stored] = [r for r in results if not r.duplicate]
            assert {r.id for r in results} == {stored.id}, n
            assert store.inspect(stored.id).payload == n
