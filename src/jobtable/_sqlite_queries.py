"""The seam's Queries on SQLite: the generated Querier and the calls that take several rows."""

from collections.abc import Sequence

from jobtable._engine import ClaimedRow
from jobtable.db.sqlite.jobs import CreateJobsParams, Querier


class SQLiteQueries(Querier):
    """The generated Querier with the seam's calls that take several rows at once."""

    def insert_jobs(self, *, kind: str, jobs: Sequence[tuple[str, str]], now: str) -> None:
        self.create_jobs(
            CreateJobsParams(id=job_id, kind=kind, payload=payload, now=now)
            for job_id, payload in jobs
        )

    def finish_and_claim_jobs(
        self,
        *,
        ids: list[str],
        attempts: list[int],
        results: list[str | None],
        errors: list[str | None],
        runner: str | None,
        now: str,
        max_jobs: int,
    ) -> tuple[list[str], Sequence[ClaimedRow]]:
        # A statement per job costs no round trip here: they all share the
        # writer's transaction.
        finished: list[str] = []
        for job_id, attempt, result, error in zip(ids, attempts, results, errors, strict=True):
            if error is None:
                count = self.succeed_job(result=result, now=now, id=job_id, attempt=attempt)
            else:
                count = self.fail_job(error=error, now=now, id=job_id, attempt=attempt)
            if count:
                finished.append(job_id)
        if max_jobs <= 0:
            return finished, []
        return finished, self.claim_next_job(runner=runner, now=now, max_jobs=max_jobs)
