"""Log records about one job: the runner's logger with the job's id and kind as fields."""

import logging
from collections.abc import MutableMapping
from typing import Any


class JobLogger(logging.LoggerAdapter[logging.Logger]):
    """Adds the job's id and kind to every record as structured fields."""

    def __init__(self, logger: logging.Logger, job_id: str, kind: str) -> None:
        super().__init__(logger, {"job_id": job_id, "kind": kind})

    def process(
        self, msg: object, kwargs: MutableMapping[str, Any]
    ) -> tuple[object, MutableMapping[str, Any]]:
        kwargs["extra"] = {**(self.extra or {}), **kwargs.get("extra", {})}
        return msg, kwargs
