"""Log records about one attempt of a job: the runner's logger with its id, kind and attempt."""

import logging
from collections.abc import MutableMapping
from typing import Any


class JobLogger(logging.LoggerAdapter[logging.Logger]):
    """Adds the job's id, kind and attempt to every record as structured fields.

    ``job_id``, ``kind`` and ``attempt`` (the claim's attempt number, from 1)
    are attributes of each record, which a formatter or a JSON handler
    prints; the message itself need not repeat them.
    """

    def __init__(self, logger: logging.Logger, job_id: str, kind: str, attempt: int) -> None:
        super().__init__(logger, {"job_id": job_id, "kind": kind, "attempt": attempt})

    def process(
        self, msg: object, kwargs: MutableMapping[str, Any]
    ) -> tuple[object, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return msg, kwargs
