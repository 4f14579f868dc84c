"""Where a runner's claims and outcomes are written: on its event loop when the engine can.

A PostgreSQL engine gives a started runner connections of its own on the
runner's event loop (``PostgresEngine.loop_connections``): a claim with
the outcomes riding on it is one statement there, and skips the hop to a
pooled connection's thread and back. Everything else, and every write of
an engine without them (SQLite, whose commit waits for an fsync and must
not run on the loop), goes through ``engine.awrite`` as before: a claim
whose outcomes end jobs of a workflow (more statements, one transaction),
a claim of a queue with flow control, and the writes before start and
after close.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from jobtable._engines.rows import ClaimedRow
from jobtable._runner.operations import FinishAndClaim, WorkflowFinishAndClaim
from jobtable._store import Store

if TYPE_CHECKING:  # psycopg is needed only where the engine is PostgreSQL's
    from jobtable._engines.postgres.loop import LoopConnections


class Cycle:
    """Writes a runner's FinishAndClaim operations; on the event loop from open to close."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._on_loop: LoopConnections | None = None

    def open(self) -> None:
        """Takes the engine's connections on the loop, when it has them; call it at start."""
        opener = getattr(self._store.engine, "loop_connections", None)
        if opener is not None and self._on_loop is None:
            self._on_loop = opener()

    async def write(
        self, op: FinishAndClaim | WorkflowFinishAndClaim
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        """Stores op's outcomes and claims its jobs; returns the jobs finished and claimed.

        Errors are the engine's: StoreError, transient for a lost connection.
        """
        on_loop = self._on_loop
        if on_loop is None or not isinstance(op, FinishAndClaim):
            return await self._store.engine.awrite(op)
        return await on_loop.finish_and_claim(**op.arguments())

    async def close(self) -> None:
        """Closes the connections on the loop; later writes go through the engine's awrite."""
        on_loop, self._on_loop = self._on_loop, None
        if on_loop is not None:
            await on_loop.aclose()
