"""What the flow control tests share: claiming as a runner would, and finishing by hand."""

import jobtable
from jobtable._engines.rows import Outcome
from jobtable._runner.run_operations import Finish, FlowClaim
from jobtable._values import timestamp


def claim(store: jobtable.Store, queue: str, max_jobs: int, runner: str = "r1") -> list[str]:
    """Claims up to max_jobs jobs of queue as a runner's claim does; their ids in claim order.

    The jobs stay running until finish: these tests look at the claim alone.
    """
    _, rows, _ = store.engine.write(
        FlowClaim((), runner, queue, max_jobs, timestamp(store.clock()))
    )
    return [row.id for row in sorted(rows, key=lambda row: (row.priority, row.seq))]


def finish(
    store: jobtable.Store, job_id: str, state: str = "succeeded", runner: str = "r1"
) -> None:
    """Ends the running job job_id as state (succeeded, failed or cancelled), freeing its slot."""
    attempt = store.inspect(job_id).attempt
    outcome = Outcome(
        job_id,
        attempt,
        state,
        "1" if state == "succeeded" else None,
        "it failed" if state == "failed" else None,
        None,
    )
    store.engine.write(
        FlowClaim([Finish(outcome, "k")], runner, "unused", 0, timestamp(store.clock()))
    )
