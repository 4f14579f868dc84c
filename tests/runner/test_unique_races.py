"""Concurrent enqueues of one unique key store exactly one job, and every caller is told its id.

Threads (each with a store of its own, so a connection of its own) and
processes enqueue the same keys at the same moment, on both engines. The
figures (callers, collisions, jobs created) are printed: ``pytest -s``.
"""

import collections
import json
import pathlib
import subprocess
import sys
import threading

import pytest

import jobtable

race = jobtable.Kind("race", int, int)
RACER = pathlib.Path(__file__).with_name("unique_racer.py")


def check_rounds(
    store: jobtable.Store, told: dict[int, list[jobtable.EnqueueResult]], what: str
) -> None:
    """Each round has one job, one caller that stored it, and every caller told its id."""
    jobs = store.list_jobs(kind="race", limit=1000)
    for n, results in told.items():
        [stored] = [r for r in results if not r.duplicate]
        assert {r.id for r in results} == {stored.id}, n
        assert store.inspect(stored.id).payload == n
    assert len(jobs) == len(told)
    callers = sum(len(results) for results in told.values())
    print(
        f"\n{what}: {callers} callers, {callers - len(jobs)} collisions, {len(jobs)} jobs created"
    )


def test_threads_enqueueing_one_key_at_once_store_one_job(store_target: str, engine: str) -> None:
    threads, rounds = 8, 25
    stores = [jobtable.Store.open(store_target) for _ in range(threads)]
    start = threading.Barrier(threads)
    told: dict[int, list[jobtable.EnqueueResult]] = collections.defaultdict(list)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def enqueue(store: jobtable.Store, index: int) -> None:
        try:
            for n in range(rounds):
                unique = jobtable.Unique(key=f"round-{n}")
                start.wait(30)
                if index % 2:
                    [result] = race.enqueue_many_results(store, [n], unique=unique)
                else:
                    result = race.enqueue_result(store, n, unique=unique)
                with lock:
                    told[n].append(result)
        except BaseException as err:
            errors.append(err)
            start.abort()

    try:
        workers = [
            threading.Thread(target=enqueue, args=(store, i)) for i, store in enumerate(stores)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert errors == []
        check_rounds(stores[0], told, f"{engine}, {threads} threads x {rounds} keys")
    finally:
        for store in stores:
            store.close()


def test_a_key_freed_and_taken_again_meanwhile_never_has_two_holders(
    store_target: str, engine: str
) -> None:
    # One thread cancels whichever job holds the key while the others keep
    # enqueueing it: an enqueue may find the holder gone between its insert
    # and its read, and must then insert again, never store a second holder.
    enqueuers, tries = 4, 40
    stores = [jobtable.Store.open(store_target) for _ in range(enqueuers + 1)]
    unique = jobtable.Unique(key="hot")
    told: list[jobtable.EnqueueResult] = []
    done = threading.Event()
    errors: list[BaseException] = []

    def enqueue(store: jobtable.Store) -> None:
        try:
            for n in range(tries):
                told.append(race.enqueue_result(store, n, unique=unique))
        except BaseException as err:
            errors.append(err)

    def cancel(store: jobtable.Store) -> None:
        try:
            while not done.is_set():
                for record in store.list_jobs(kind="race", status="queued"):
                    store.cancel(record.id)
        except BaseException as err:
            errors.append(err)

    try:
        canceller = threading.Thread(target=cancel, args=(stores[0],))
        canceller.start()
        workers = [threading.Thread(target=enqueue, args=(s,)) for s in stores[1:]]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        done.set()
        canceller.join()
        assert errors == []
        jobs = stores[0].list_jobs(kind="race", limit=1000)
        assert len([j for j in jobs if j.status is jobtable.Status.QUEUED]) <= 1
        created = [r.id for r in told if not r.duplicate]
        assert sorted(created) == sorted(j.id for j in jobs)
        assert {r.id for r in told} <= {j.id for j in jobs}
        print(
            f"\n{engine}, holder cancelled meanwhile: {len(told)} callers, "
            f"{len(told) - len(created)} collisions, {len(created)} jobs created"
        )
    finally:
        for store in stores:
            store.close()


@pytest.mark.slow
def test_processes_enqueueing_one_key_at_once_store_one_job(
    store_target: str, engine: str, tmp_path: pathlib.Path
) -> None:
    processes, rounds = 4, 40
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
        check_rounds(store, told, f"{engine}, {processes} processes x {rounds} keys")
