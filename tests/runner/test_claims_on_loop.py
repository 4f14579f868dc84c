"""A started runner on PostgreSQL claims and stores outcomes on its own event loop.

Its claims, with the outcomes riding on them, go to connections on the
loop (``jobtable._runner.cycle``), not through the engine's awrite and a
thread; the connections themselves are tested in test_postgres_loop.py.
"""

from collections.abc import Callable
from typing import TypeVar

import pytest
from test_run import CountingEngine, Finished, WaitUntil, run_until_finished

import jobtable
from jobtable._engines.base import Queries
from jobtable._engines.postgres.engine import PostgresEngine
from jobtable._engines.postgres.loop import LoopConnections
from jobtable._runner.operations import FinishAndClaim

pytestmark = pytest.mark.postgres

T = TypeVar("T")


class ClaimsCounted(CountingEngine):
    """A store's real PostgreSQL engine, with its connections on the loop, counting claims.

    claims_in_threads counts the claims handed to awrite, which runs them
    on a pooled connection in a thread.
    """

    def __init__(self, engine: PostgresEngine) -> None:
        super().__init__(engine)
        self.loop_connections: Callable[[], LoopConnections] = engine.loop_connections
        self.claims_in_threads = 0

    async def awrite(self, op: Callable[[Queries], T]) -> T:
        if isinstance(op, FinishAndClaim):
            self.claims_in_threads += 1
        return await super().awrite(op)


@pytest.mark.parametrize("workers", [1, 4])
async def test_a_started_runner_claims_on_its_loop_and_stores_every_outcome(
    pg_url: str, wait_until: WaitUntil, finished: Finished, workers: int
) -> None:
    engine = ClaimsCounted(PostgresEngine.open(pg_url))
    store = jobtable.Store(engine, target="counted")
    try:
        runner = jobtable.Runner(store, workers=workers)

        async def double(ctx: jobtable.JobContext[int], payload: int) -> int:
            return 2 * payload

        numbers = runner.register("number", double)
        ids = numbers.enqueue_many(range(20))
        await run_until_finished(runner, ids, wait_until, finished)
        assert [numbers.get(i).result for i in ids] == [2 * n for n in range(20)]
    finally:
        store.close()
    assert engine.claims_in_threads == 0
