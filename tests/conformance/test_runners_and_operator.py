"""The runner and operator queries of the seam (runners, admin.sql), alike on every engine.

A runner counts as dead here through a negative lease, so a case needs no
clock of its own: PostgreSQL measures leases on the server's clock, SQLite
on the time it is given, and both agree that a heartbeat is older than a
moment a minute ahead.
"""

from datetime import UTC, datetime, timedelta

from seam import claim, enqueue, fail, now

from conformance.engine_kits import at, covers
from jobtable._engines.base import Engine, Queries
from jobtable._engines.rows import NewJob


def register(engine: Engine, name: str, host: str | None = "h", process: str | None = "1") -> None:
    """Registers runner name on host with process, in a write of its own."""
    engine.write(lambda q: q.register_runner(name=name, now=now(), host=host, process=process))


@covers("register_runner", "get_runner", "heartbeat_runner", "delete_runner")
def test_a_runner_registers_beats_and_leaves(opened: Engine) -> None:
    opened.write(lambda q: q.register_runner(name="r1", now=now(), host=None, process=None))
    alive = opened.read(lambda q: q.get_runner(name="r1", now=now(), lease=3600))
    dead = opened.read(lambda q: q.get_runner(name="r1", now=at(60), lease=-60))
    beats = opened.write(lambda q: q.heartbeat_runner(now=now(), name="r1"))
    opened.write(lambda q: q.delete_runner(name="r1"))
    assert alive is not None
    assert (alive.name, alive.alive) == ("r1", True)
    assert dead is not None
    assert not dead.alive
    assert beats == 1
    assert opened.read(lambda q: q.get_runner(name="r1", now=now(), lease=3600)) is None
    assert opened.write(lambda q: q.heartbeat_runner(now=now(), name="r1")) == 0


@covers("set_runner_missing_keys", "list_runners")
def test_runners_are_listed_with_the_keys_they_lack(opened: Engine) -> None:
    register(opened, "r1")
    register(opened, "r2")
    opened.write(lambda q: q.set_runner_missing_keys(missing_keys='["k1"]', name="r1"))
    rows = opened.read(lambda q: q.list_runners(now=now(), lease=3600))
    listed = sorted((row.name, row.alive, row.missing_keys) for row in rows)
    assert listed == [("r1", True, '["k1"]'), ("r2", True, None)]


@covers("list_runners_on_host", "delete_runner_process")
def test_runners_of_a_host_are_found_and_forgotten_by_process(opened: Engine) -> None:
    register(opened, "r1", "h", "11")
    register(opened, "r2", "h", "12")
    register(opened, "r3", "other", "13")
    peers = opened.read(lambda q: q.list_runners_on_host(host="h", name="r1"))
    wrong = opened.write(lambda q: q.delete_runner_process(name="r2", host="h", process="99"))
    gone = opened.write(lambda q: q.delete_runner_process(name="r2", host="h", process="12"))
    assert [(row.name, row.process) for row in peers] == [("r2", "12")]
    assert (wrong, gone) == (0, 1)


@covers("delete_dead_runners", "interrupt_jobs_of_dead_runners")
def test_dead_runners_are_forgotten_and_their_jobs_interrupted(opened: Engine) -> None:
    register(opened, "dead")
    register(opened, "me")
    enqueue(opened, "a")
    claim(opened, 1, "dead")

    def rescue(q: Queries) -> tuple[int, int]:
        jobs = q.interrupt_jobs_of_dead_runners(error="lost", now=at(60), lease=-60, runner="me")
        runners = q.delete_dead_runners(now=at(60), lease=-60, name="me")
        return jobs, runners

    assert opened.write(rescue) == (1, 1)
    job = opened.read(lambda q: q.get_job(id="a"))
    assert job is not None
    assert job.status != "running"
    assert opened.read(lambda q: q.get_runner(name="me", now=now(), lease=3600)) is not None


@covers("jobs_statistics_stale", "analyze_jobs")
def test_statistics_are_gathered_on_request(opened: Engine) -> None:
    enqueue(opened, "a")
    opened.write(lambda q: q.analyze_jobs())
    assert opened.read(lambda q: q.jobs_statistics_stale()) is False


@covers("requeue_job", "requeue_failed_jobs", "failed_workflow_jobs", "wake_runners")
def test_failed_jobs_are_requeued_one_or_all(opened: Engine) -> None:
    enqueue(opened, "a", "b")
    fail(opened, "a")
    fail(opened, "b")

    def requeue_one(q: Queries) -> int:
        count = q.requeue_job(now=now(), id="a")
        q.wake_runners()
        return count

    assert opened.write(requeue_one) == 1
    assert opened.write(lambda q: q.requeue_job(now=now(), id="a")) == 0  # queued: not failed
    assert opened.read(lambda q: q.failed_workflow_jobs(kind=None, queue=None)) == []
    assert opened.write(lambda q: q.requeue_failed_jobs(now=now(), kind="k", queue=None)) == 1
    assert claim(opened, 5) == ["a", "b"]


@covers("delete_job", "list_held_jobs")
def test_a_job_is_deleted_unless_it_runs(opened: Engine) -> None:
    enqueue(opened, "a", "b")
    claim(opened, 1, "r1")
    held = opened.read(lambda q: q.list_held_jobs())
    assert [(row.runner, row.id, row.queue) for row in held] == [("r1", "a", "default")]
    assert opened.write(lambda q: q.delete_job(id="a")) == 0
    assert opened.write(lambda q: q.delete_job(id="b")) == 1
    assert opened.read(lambda q: q.get_job(id="b")) is None


@covers("job_stats", "finished_per_minute")
def test_stats_count_jobs_by_queue_and_status(opened: Engine) -> None:
    enqueue(opened, "a", "b")
    fail(opened, "a")
    stats = opened.read(lambda q: q.job_stats(now=at(60)))
    minutes = opened.read(lambda q: q.finished_per_minute(since=at(-3600)))
    assert sorted((row.queue, row.status, row.jobs, row.due) for row in stats) == [
        ("default", "failed", 1, 0),
        ("default", "queued", 1, 1),
    ]
    assert [(row.status, row.jobs) for row in minutes] == [("failed", 1)]


@covers("list_sealed_jobs", "reseal_job")
def test_sealed_jobs_are_listed_and_resealed_only_while_unchanged(opened: Engine) -> None:
    sealed = '{"$secret": "old"}'
    jobs = [NewJob("a", "{}", now()), NewJob("b", sealed, now())]
    opened.write(lambda q: q.insert_jobs(kind="k", jobs=jobs, now=now()))
    rows = opened.read(lambda q: q.list_sealed_jobs(after_seq=0, max_jobs=10))
    assert [(row.id, row.payload, row.result) for row in rows] == [("b", sealed, None)]

    def reseal(old: str) -> int:
        new = '{"$secret": "new"}'
        return opened.write(
            lambda q: q.reseal_job(
                new_payload=new, new_result=None, id="b", old_payload=old, old_result=None
            )
        )

    assert reseal('{"$secret": "other"}') == 0
    assert reseal(sealed) == 1
    after = opened.read(lambda q: q.list_sealed_jobs(after_seq=rows[0].seq, max_jobs=10))
    assert after == []


@covers("get_runner", "list_runners", "job_stats", "finished_per_minute")
def test_runners_and_stats_carry_their_times_as_aware_utc_datetimes(opened: Engine) -> None:
    register(opened, "r1")
    enqueue(opened, "a", "b")
    fail(opened, "a")
    runner = opened.read(lambda q: q.get_runner(name="r1", now=now(), lease=3600))
    listed = opened.read(lambda q: q.list_runners(now=now(), lease=3600))
    stats = opened.read(lambda q: q.job_stats(now=at(60)))
    minutes = opened.read(lambda q: q.finished_per_minute(since=at(-3600)))
    assert runner is not None
    times = [runner.started_at, runner.heartbeat_at]
    times += [t for row in listed for t in (row.started_at, row.heartbeat_at)]
    times += [row.oldest_run_at for row in stats] + [row.minute for row in minutes]
    assert len(times) == 7
    assert all(t.utcoffset() == timedelta(0) for t in times)
    hour = timedelta(hours=1)
    assert all(abs(t - datetime.now(UTC)) < hour for t in times)
