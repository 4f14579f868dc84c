"""Outcomes as the arrays PostgreSQL's finishing statements take: element i is attempt i's."""

import datetime
from collections.abc import Sequence
from typing import TypedDict

from jobtable._engines.rows import Outcome, seam_time


class OutcomeArrays(TypedDict):
    """The arrays of FinishAndClaimJobs and FinishWorkflowJobs (postgres/queries)."""

    ids: list[str]
    attempts: list[int]
    states: list[str]
    results: list[str | None] | None
    errors: list[str | None] | None
    run_ats: list[datetime.datetime | None] | None
    run_traces: list[str | None] | None


def outcome_arrays(outcomes: Sequence[Outcome]) -> OutcomeArrays:
    """outcomes as arrays; run_traces None, not a list of nulls, when none has a run trace.

    An uninstrumented store's outcomes have none: it sends nothing more.
    """
    traced = any(o.run_trace is not None for o in outcomes)
    return OutcomeArrays(
        ids=[o.id for o in outcomes],
        attempts=[o.attempt for o in outcomes],
        states=[o.state for o in outcomes],
        results=[o.result for o in outcomes],
        errors=[o.error for o in outcomes],
        run_ats=[None if o.run_at is None else seam_time(o.run_at) for o in outcomes],
        run_traces=[o.run_trace for o in outcomes] if traced else None,
    )
