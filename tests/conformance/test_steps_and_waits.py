"""The step and wait queries of the seam (queries/steps.sql, waits.sql), alike on every engine."""

from seam import claim, enqueue, now

from conformance.engine_kits import at, covers
from jobtable._engines.base import Engine
from jobtable._engines.rows import NewJob


@covers("record_job_step", "get_job_step", "list_job_steps")
def test_a_step_is_recorded_once_under_the_current_claim(opened: Engine) -> None:
    enqueue(opened, "a")
    claim(opened, 1)

    def record(name: str, attempt: int) -> int:
        return opened.write(
            lambda q: q.record_job_step(name=name, output="[1]", now=now(), id="a", attempt=attempt)
        )

    assert (record("s1", 1), record("s1", 1), record("s2", 2)) == (1, 0, 0)
    step = opened.read(lambda q: q.get_job_step(job_id="a", name="s1"))
    steps = opened.read(lambda q: q.list_job_steps(job_id="a"))
    assert step is not None
    assert step.output == "[1]"
    assert opened.read(lambda q: q.get_job_step(job_id="a", name="s2")) is None
    assert [(row.name, row.output, row.attempt) for row in steps] == [("s1", "[1]", 1)]


@covers("suspend_waiting_job", "get_job_wait", "send_signal", "find_signal", "end_job_wait")
def test_a_signal_wakes_the_job_waiting_for_it(opened: Engine) -> None:
    enqueue(opened, "a")
    claim(opened, 1)
    suspended = opened.write(
        lambda q: q.suspend_waiting_job(
            id="a",
            attempt=1,
            position=0,
            name="paid",
            key="o1",
            after_id=0,
            deadline=None,
            run_at=at(3600),
            now=now(),
        )
    )
    wait = opened.read(lambda q: q.get_job_wait(job_id="a"))
    assert suspended == 1
    assert wait is not None
    assert (wait.position, wait.name, wait.key, wait.after_id) == (0, "paid", "o1", 0)
    assert claim(opened, 1) == []
    woke = opened.write(lambda q: q.send_signal(name="paid", key="o1", payload='"x"', now=now()))
    signal = opened.read(lambda q: q.find_signal(name="paid", key="o1", after_id=0))
    assert woke == 1
    assert signal is not None
    assert signal.payload == '"x"'
    assert opened.read(lambda q: q.find_signal(name="paid", key="o1", after_id=signal.id)) is None
    assert claim(opened, 1) == ["a"]
    assert opened.write(lambda q: q.end_job_wait(job_id="a")) == 1
    assert opened.read(lambda q: q.get_job_wait(job_id="a")) is None


@covers("prune_signals")
def test_old_signals_are_pruned(opened: Engine) -> None:
    opened.write(lambda q: q.send_signal(name="paid", key="o1", payload="1", now=now()))
    assert opened.write(lambda q: q.prune_signals(before=at(-60))) == 0
    assert opened.write(lambda q: q.prune_signals(before=at(60))) == 1
    assert opened.read(lambda q: q.find_signal(name="paid", key="o1", after_id=0)) is None


@covers("ready_scheduled_jobs")
def test_scheduled_jobs_are_made_ready_now(opened: Engine) -> None:
    job = NewJob("a", "{}", at(3600))
    opened.write(lambda q: q.insert_jobs(kind="k", jobs=[job], now=now()))
    assert claim(opened, 1) == []
    assert opened.write(lambda q: q.ready_scheduled_jobs(queue="default")) == 1
    assert claim(opened, 1) == ["a"]
