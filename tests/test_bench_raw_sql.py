"""The benchmark's raw loops still run the store's own SQL with the parameters it takes.

``make bench`` measures jobtable against the generated Querier's statements run
in a tight loop; a statement that gained a parameter would stop those loops
with a binding error, and the benchmark would only say its raw figures
stopped early. Each loop runs here on a few jobs, on both engines, and must
leave every job it claimed succeeded.
"""

from collections.abc import Iterator

import pytest
from engine_params import ENGINES

from bench._db import Database
from bench._postgres_db import PostgresDatabase
from bench._sqlite_db import SQLiteDatabase

JOBS = 12


@pytest.fixture(params=ENGINES)
def database(request: pytest.FixtureRequest) -> Iterator[Database]:
    db: Database
    if request.param == "sqlite":
        db = SQLiteDatabase.create(durable=False)
    else:
        db = PostgresDatabase.create(request.getfixturevalue("pg_server"))
    try:
        yield db
    finally:
        db.close()


@pytest.mark.parametrize("mode", ["step", "life", "batch"])
def test_each_job_life_runs_to_succeeded(database: Database, mode: str) -> None:
    database.raw_life(JOBS, mode)
    assert database.count("succeeded") == JOBS
    assert database.count("queued") == database.count("running") == 0


@pytest.mark.parametrize("size", [1, 4])
def test_the_claim_and_finish_cycle_runs_to_succeeded(database: Database, size: int) -> None:
    database.raw_cycle(JOBS, size)
    assert database.count("succeeded") == JOBS


def test_claims_and_start_latency_run(database: Database) -> None:
    database.raw_insert(JOBS, 4)
    database.raw_claim(JOBS, 4)
    assert database.count("running") == JOBS
    database.reset()
    assert len(database.raw_start_latency(3)) == 3
    database.fill_finished(JOBS)
    assert database.count("succeeded") >= JOBS
