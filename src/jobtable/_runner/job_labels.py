"""A job's tags and metadata as its handler reads them: from the store, once."""

import json
from typing import Any

from jobtable._engines.base import Queries
from jobtable._engines.rows import LabelsRow
from jobtable._labels import Labels
from jobtable._store import Store


class JobLabels:
    """Reads a job's tags and metadata once: before the attempt, or at the first use.

    The claim does not return them (a job's tags and metadata are read by
    few handlers, and every claim would carry them), so a handler whose
    kind declares a meta model, or a runner with hooks, reads them before
    the handler runs, off the event loop; otherwise ``ctx.meta`` reads them
    when first used. Metadata is decoded with the kind's meta model.
    """

    __slots__ = ("_job_id", "_labels", "_store", "_value")

    def __init__(self, store: Store, job_id: str, labels: Labels | None) -> None:
        self._store = store
        self._job_id = job_id
        self._labels = labels
        self._value: tuple[list[str], Any] | None = None

    @classmethod
    async def read(
        cls, store: Store, job_id: str, labels: Labels | None, *, eager: bool
    ) -> "JobLabels":
        """The labels of job_id, read now when eager or when labels has a meta model."""
        made = cls(store, job_id, labels)
        if eager or (labels is not None and labels.meta.model is not None):
            made._value = made._decode(await store.engine.aread(made._query))
        return made

    def _query(self, q: Queries) -> LabelsRow | None:
        return q.get_job_labels(id=self._job_id)

    def _decode(self, row: LabelsRow | None) -> tuple[list[str], Any]:
        tags: list[str] = [] if row is None else json.loads(row.tags)
        meta = None if row is None else row.meta
        if self._labels is None:
            return tags, {} if meta is None else json.loads(meta)
        return tags, self._labels.meta.decode(meta)

    def __call__(self) -> tuple[list[str], Any]:
        """The tags and the metadata, read from the store now if they were not yet."""
        if self._value is None:
            self._value = self._decode(self._store.engine.read(self._query))
        return self._value
