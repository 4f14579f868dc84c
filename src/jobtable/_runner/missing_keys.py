"""The jobs a runner cannot decrypt: put back, their attempt unused, for a runner with the key.

A job's secrets are sealed under a key id. A runner whose store lacks that
key (or holds another one under its id) cannot run the job, but another
runner, or this one restarted with the key, can: the job goes back to the
queue without using an attempt, after a wait that grows with each claim,
and the runner logs the key id as an error and counts it.
"""

import datetime
import json
import logging

from jobtable._engines.rows import ClaimedRow
from jobtable._errors import SecretKeyError
from jobtable._options import ExponentialBackoff
from jobtable._runner.run_operations import Finish
from jobtable._runner.shared import JobLogger
from jobtable._values import timestamp

KEY_WAIT = ExponentialBackoff(datetime.timedelta(seconds=1), datetime.timedelta(minutes=5))
"""How long a job waits, by its claims so far, after a runner without its key put it back."""


class MissingKeys:
    """The secret keys one runner lacked, and the outcome of each job it put back for one."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self.counts: dict[str, int] = {}
        """The ids of the keys this runner lacked, each with how many jobs it put back."""

    def report(self) -> str | None:
        """The ids of the keys this runner lacked, as the runners table records them.

        A JSON array of the key ids, sorted; None while it lacked none.
        """
        if not self.counts:
            return None
        return json.dumps(sorted(self.counts))

    def put_back(
        self, job: ClaimedRow, err: SecretKeyError, now: datetime.datetime
    ) -> Finish | None:
        """The job back, queued at now, its attempt unused, when err names a key id it lacks.

        Logs err, which names the key id only. The job waits ``KEY_WAIT`` of
        its claims so far before any runner claims it again, so that a runner
        without the key does not take it again at once. None when err names
        no key id: the attempt fails as any other would.
        """
        key_id = err.key_id
        if key_id is None:
            return None
        wait = KEY_WAIT(job.attempt)
        self.counts[key_id] = self.counts.get(key_id, 0) + 1
        JobLogger(self._logger, job.id, job.kind, job.attempt).error(
            "this runner cannot decrypt the job's secrets: %s. The job is put back without "
            'using an attempt, for a runner that has secret key "%s", and waits %s s; give '
            "this runner that key (secret_keys= or JOBTABLE_SECRET_KEYS)",
            err,
            key_id,
            f"{round(wait.total_seconds(), 3):g}",
        )
        return Finish.snoozed(job, timestamp(now + wait))
