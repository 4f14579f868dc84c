"""SQLite as the oracle of PostgreSQL's SQL: one random run of queries, on both, step by step.

A Hypothesis state machine runs the same random calls of the ``Queries``
seam on a SQLite store and on a PostgreSQL store: creates one at a time and
in batches, claims and finish-and-claims (``FinishAndClaimJobs``, the riskiest
statement, with outcomes that mix successes and failures and include stale
attempts, finished jobs and unknown ids), publishes, heartbeats,
``InterruptRunningJobs``, prunes and reads. Dead-runner rescues are not
compared: PostgreSQL measures leases on the server's clock, not the one the
machine moves (the conformance suite and the runner tests cover them).
Every call gets the time of a clock the machine moves itself. After each call
the two engines must have
returned the same thing (or both raised StoreError), and after each step
every row of both databases must be the same.

``test_machine_finds_a_planted_difference`` runs it against a PostgreSQL
``FinishAndClaimJobs`` without its attempt fence, and expects it to fail.
"""

import dataclasses
import datetime
import pathlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import hypothesis.strategies as st
import pytest
from finding import FIND_SETTINGS
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from seam import engine_of, timestamp

import jobtable
from jobtable._engines.base import Engine, Queries
from jobtable._engines.rows import NewJob, Outcome
from jobtable._errors import StoreError
from jobtable._unique import create_unique_jobs

EPOCH = datetime.datetime(2024, 2, 29, 23, 59, 0, 123456, tzinfo=datetime.UTC)
"""The machine's clock starts here; each step may move it on by whole seconds."""

RUNNERS = ["r1", "r2", "r3"]
KINDS = ["thumbnail", "mail"]
BIG = 1000
"""A limit above any number of jobs a run makes."""

Columns = tuple[Any, ...]


@dataclasses.dataclass
class Databases:
    """The two stores under test, and a way to read every row of each behind its engine."""

    sqlite: Engine
    postgres: Engine
    sqlite_rows: Callable[[str], list[Columns]]
    postgres_rows: Callable[[str], list[Columns]]
    wipe: Callable[[], None]


JOB_COLUMNS = (
    "id, kind, status, payload, result, error, runner, attempt, created_at, updated_at,"
    " unique_key, unique_statuses, traceparent"
)
RUNNER_COLUMNS = "name, host, process"
"""No times: PostgreSQL stamps a runner's times with the server's clock."""
HOSTS = ["h1", "h2", None]
PROCESSES = ["1 10", "2 20", None]


def outcome(job_id: str, attempt: int, result: str | None, error: str | None) -> Outcome:
    """The outcome of attempt: succeeded with result, or failed finally with error when set."""
    if error is None:
        return Outcome(job_id, attempt, "succeeded", result, None, None)
    return Outcome(job_id, attempt, "failed", None, error, None)


def as_text(value: object) -> object:
    """A column's value with PostgreSQL's timestamptz in the seam's UTC text, as SQLite keeps it."""
    if isinstance(value, datetime.datetime):
        return timestamp(value)
    return value


@pytest.fixture
def databases(tmp_path: pathlib.Path, pg_url: str) -> Iterator[Databases]:
    """A SQLite store and a PostgreSQL store, fresh, open for the whole test."""
    import psycopg

    path = tmp_path / "oracle.db"
    with jobtable.Store.open(str(path)) as lite, jobtable.Store.open(pg_url) as pg:
        lite_conn = sqlite3.connect(path, isolation_level=None)
        pg_conn = psycopg.connect(pg_url, autocommit=True)

        def sqlite_rows(query: str) -> list[Columns]:
            return [tuple(row) for row in lite_conn.execute(query).fetchall()]

        def postgres_rows(query: str) -> list[Columns]:
            return [tuple(as_text(v) for v in row) for row in pg_conn.execute(query).fetchall()]

        def wipe() -> None:
            for conn in (lite_conn, pg_conn):
                conn.execute("DELETE FROM jobs")
                conn.execute("DELETE FROM runners")

        try:
            yield Databases(engine_of(lite), engine_of(pg), sqlite_rows, postgres_rows, wipe)
        finally:
            lite_conn.close()
            pg_conn.close()


def claimed_view(rows: Sequence[Any]) -> list[Columns]:
    """Claimed rows oldest first, without seq: each engine numbers its rows itself."""
    return [
        (row.id, row.kind, row.payload, row.attempt) for row in sorted(rows, key=lambda r: r.seq)
    ]


Op = Callable[[Queries], object]


class DifferentialMachine(RuleBasedStateMachine):
    """Runs each step on both engines and compares; ``dbs`` is set by the test."""

    dbs: Databases

    def __init__(self) -> None:
        super().__init__()
        self.dbs.wipe()
        self.clock = 0
        self.count = 0
        self.ids: list[str] = []

    # The machine's own clock and ids.

    def at(self, offset: int = 0) -> str:
        """The time offset seconds from the machine's clock, as the seam's text."""
        return timestamp(EPOCH + datetime.timedelta(seconds=self.clock + offset))

    def new_id(self) -> str:
        self.count += 1
        job_id = f"job{self.count:04}"
        self.ids.append(job_id)
        return job_id

    # Running a call on both engines.

    def both(self, op: Op, view: Callable[[Any], object] = lambda value: value) -> object:
        """Runs op on each engine in a write; their views of the results must be equal.

        A StoreError (a constraint the call broke) must come from both.
        """
        outcomes: list[object] = []
        for engine in (self.dbs.sqlite, self.dbs.postgres):
            try:
                outcomes.append(("returned", view(engine.write(op))))
            except StoreError:
                outcomes.append(("raised", "StoreError"))
        lite, pg = outcomes
        assert lite == pg, f"SQLite gave {lite}, PostgreSQL gave {pg}"
        return lite

    def running(self) -> list[tuple[str, int]]:
        """The (id, attempt) of every running job, as SQLite has them."""
        rows = self.dbs.sqlite_rows("SELECT id, attempt FROM jobs WHERE status = 'running'")
        return sorted((str(row[0]), int(row[1])) for row in rows)

    # Steps.

    @rule(seconds=st.integers(0, 3))
    def tick(self, seconds: int) -> None:
        self.clock += seconds

    @rule(kind=st.sampled_from(KINDS), payload=st.integers(-5, 5))
    def create(self, kind: str, payload: int) -> None:
        job_id, moment = self.new_id(), self.at()
        job = NewJob(job_id, f"[{payload}]", moment)
        self.both(lambda q: q.insert_jobs(kind=kind, jobs=[job], now=moment))

    @rule(kind=st.sampled_from(KINDS), size=st.integers(1, 4))
    def create_many(self, kind: str, size: int) -> None:
        moment = self.at()
        # Every other job tagged, so the listing by tag has jobs to find and to skip.
        tags = ['["even","all"]', '["all"]']
        jobs = [
            NewJob(self.new_id(), f'{{"n": {n}}}', moment, tags=tags[n % 2]) for n in range(size)
        ]
        self.both(lambda q: q.insert_jobs(kind=kind, jobs=jobs, now=moment))

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def create_duplicate(self, data: st.DataObject) -> None:
        job_id = data.draw(st.sampled_from(self.ids))
        moment = self.at()
        job = NewJob(job_id, "{}", moment)
        self.both(lambda q: q.insert_jobs(kind="mail", jobs=[job], now=moment))

    @rule(
        kind=st.sampled_from(KINDS),
        keys=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3),
        statuses=st.sampled_from([3, 7, 15, 31]),
        traceparent=st.sampled_from(
            [None, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]
        ),
    )
    def create_unique(
        self, kind: str, keys: list[str], statuses: int, traceparent: str | None
    ) -> None:
        moment = self.at()
        jobs = [
            NewJob(
                self.new_id(),
                "{}",
                moment,
                traceparent=traceparent,
                unique_key=key,
                unique_statuses=statuses,
            )
            for key in keys
        ]
        self.both(create_unique_jobs(kind, jobs, moment))

    @rule(
        status=st.sampled_from([None, "queued", "running", "succeeded", "failed"]),
        kind=st.sampled_from([None, *KINDS]),
        queue=st.sampled_from([None, "default", "other"]),
        tag=st.sampled_from([None, "even", "all"]),
        max_jobs=st.integers(1, 4),
    )
    def list_page(
        self,
        status: str | None,
        kind: str | None,
        queue: str | None,
        tag: str | None,
        max_jobs: int,
    ) -> None:
        # The first page only: seqs differ between the engines (PostgreSQL's
        # identity does not restart when the machine wipes the table).
        self.both(
            lambda q: q.list_jobs(
                before=1 << 40, status=status, kind=kind, queue=queue, tag=tag, max_jobs=max_jobs
            ),
            lambda rows: [(row.id, row.status, row.tags) for row in rows],
        )

    @rule(
        data=st.data(),
        runner=st.sampled_from([*RUNNERS, None]),
        max_jobs=st.integers(0, 4),
    )
    def finish_and_claim(self, data: st.DataObject, runner: str | None, max_jobs: int) -> None:
        """FinishAndClaimJobs with outcomes of running jobs, stale attempts and strays."""
        candidates = self.running()
        # Stale: the attempt before or after the current claim; strays: jobs
        # that are queued or finished, and an id that never existed.
        candidates += [(job_id, attempt + 1) for job_id, attempt in self.running()]
        candidates += [(job_id, attempt - 1) for job_id, attempt in self.running()]
        candidates += [(job_id, 1) for job_id in self.ids] + [("no-such-job", 1)]
        picked = data.draw(
            st.lists(st.sampled_from(candidates), max_size=5, unique_by=lambda c: c[0])
        )
        outcomes = [
            outcome(
                job_id,
                attempt,
                data.draw(st.sampled_from(['"done"', "[1, 2]", "null", None])),
                data.draw(st.sampled_from([None, None, "failed: bad photo"])),
            )
            for job_id, attempt in picked
        ]
        moment = self.at()

        def op(q: Queries) -> tuple[list[str], Sequence[Any]]:
            return q.finish_and_claim_jobs(
                outcomes=outcomes,
                runner=runner,
                queue="default",
                now=moment,
                max_jobs=max_jobs,
            )

        self.both(op, lambda value: (sorted(value[0]), claimed_view(value[1])))

    @precondition(lambda self: self.ids)
    @rule(data=st.data(), result=st.sampled_from(['"partial"', "{}", None]))
    def publish(self, data: st.DataObject, result: str | None) -> None:
        choices = [*self.running(), *((job_id, 1) for job_id in self.ids)]
        job_id, attempt = data.draw(st.sampled_from(choices))
        moment = self.at()
        self.both(
            lambda q: q.publish_job_result(result=result, now=moment, id=job_id, attempt=attempt)
        )

    @rule(
        runner=st.sampled_from(RUNNERS),
        heartbeat=st.booleans(),
        host=st.sampled_from(HOSTS),
        process=st.sampled_from(PROCESSES),
    )
    def register_or_beat(
        self, runner: str, heartbeat: bool, host: str | None, process: str | None
    ) -> None:
        moment = self.at()
        if heartbeat:
            self.both(lambda q: q.heartbeat_runner(now=moment, name=runner))
        else:
            self.both(
                lambda q: q.register_runner(name=runner, now=moment, host=host, process=process)
            )

    @rule(runner=st.sampled_from(RUNNERS), host=st.sampled_from(HOSTS))
    def list_on_host(self, runner: str, host: str | None) -> None:
        self.both(
            lambda q: q.list_runners_on_host(host=host, name=runner),
            lambda rows: [(row.name, row.process) for row in rows],
        )

    @rule(
        runner=st.sampled_from(RUNNERS),
        host=st.sampled_from(HOSTS),
        process=st.sampled_from(PROCESSES),
    )
    def delete_process(self, runner: str, host: str | None, process: str | None) -> None:
        self.both(lambda q: q.delete_runner_process(name=runner, host=host, process=process))

    @rule(runner=st.sampled_from(RUNNERS), error=st.sampled_from(["interrupted", "lost"]))
    def interrupt_running(self, runner: str, error: str) -> None:
        moment = self.at()
        self.both(lambda q: q.interrupt_running_jobs(error=error, now=moment, runner=runner))

    @rule(age=st.integers(0, 6), max_jobs=st.integers(1, 4))
    def prune(self, age: int, max_jobs: int) -> None:
        """DeleteFinishedJobs, oldest first; a limit that would split equal times is lifted.

        Rows finished at the same time have no order between them, so with a
        limit inside such a tie each engine may rightly pick different ones.
        """
        before = self.at(-age)
        times = [
            str(row[0])
            for row in self.dbs.sqlite_rows(
                "SELECT updated_at FROM jobs WHERE status IN ('succeeded', 'failed')"
                f" AND updated_at < '{before}' ORDER BY updated_at"
            )
        ]
        if max_jobs < len(times) and times[max_jobs - 1] == times[max_jobs]:
            max_jobs = BIG
        self.both(lambda q: q.delete_finished_jobs(before=before, max_jobs=max_jobs))

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        job_id = data.draw(st.sampled_from([*self.ids, "no-such-job"]))

        def view(row: Any) -> object:
            if row is None:
                return None
            return (row.id, row.kind, row.status, row.result, row.error)

        self.both(lambda q: q.get_job(id=job_id), view)

    @rule(runner=st.sampled_from([*RUNNERS, None]), age=st.integers(0, 4))
    def list_running(self, runner: str | None, age: int) -> None:
        before = self.at(-age)
        self.both(
            lambda q: q.list_running_jobs(runner=runner, before=before),
            lambda rows: sorted((row.id, row.attempt) for row in rows),
        )

    # The whole state, after every step.

    @invariant()
    def every_row_is_the_same(self) -> None:
        for query in (
            f"SELECT {JOB_COLUMNS} FROM jobs ORDER BY id",
            f"SELECT {RUNNER_COLUMNS} FROM runners ORDER BY name",
        ):
            lite, pg = self.dbs.sqlite_rows(query), self.dbs.postgres_rows(query)
            assert lite == pg, f"{query}:\nSQLite     {lite}\nPostgreSQL {pg}"


MACHINE_SETTINGS = settings(
    max_examples=30,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def machine_on(dbs: Databases) -> type[DifferentialMachine]:
    class OnTheseDatabases(DifferentialMachine):
        pass

    OnTheseDatabases.dbs = dbs
    return OnTheseDatabases


def test_sqlite_and_postgres_agree_step_by_step(databases: Databases) -> None:
    run_state_machine_as_test(machine_on(databases), settings=MACHINE_SETTINGS)


def test_machine_finds_a_planted_difference(
    databases: Databases, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL's FinishAndClaimJobs without its attempt fence, in this
    # test only: a stale attempt's outcome now lands there and not on SQLite.
    from jobtable.db.postgres import jobs

    fence = " AND jobs.attempt = outcome.attempt"
    assert fence in jobs.FINISH_AND_CLAIM_JOBS, "the planted fault no longer applies"
    monkeypatch.setattr(
        jobs, "FINISH_AND_CLAIM_JOBS", jobs.FINISH_AND_CLAIM_JOBS.replace(fence, "")
    )
    with pytest.raises(AssertionError, match="SQLite gave"):
        run_state_machine_as_test(machine_on(databases), settings=FIND_SETTINGS)
