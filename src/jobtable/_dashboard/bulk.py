"""The dashboard's bulk actions: cancel, delete or retry the selected jobs, or every match.

A bulk POST without ``confirm`` changes nothing: it answers a page that
says exactly what would change (the selected ids, or the filters) with a
form to confirm it, so a stray click never deletes a thousand jobs. The
confirmed POST runs the store's public operation and redirects to the list.
"""

import dataclasses
from collections.abc import Mapping, Sequence

from jobtable._dashboard import views
from jobtable._job import CancelResult, Status
from jobtable._operator.models import DeleteResult, RetryResult
from jobtable._store import Store

ACTIONS = ("cancel", "delete", "retry")
MAX_SELECTED = 500


class BadBulk(ValueError):
    """A bulk form that cannot be acted on; its text says why."""


@dataclasses.dataclass(frozen=True, slots=True)
class Bulk:
    """A bulk action as its form asked: what to do, to the selected ids or to the filters' jobs."""

    action: str
    ids: tuple[str, ...]
    filters: views.Filters
    by_filter: bool

    def question(self) -> str:
        """What the confirmation page asks."""
        verb = {"cancel": "Cancel", "delete": "Delete", "retry": "Queue again"}[self.action]
        if not self.by_filter:
            return f"{verb} these {len(self.ids)} selected jobs?"
        what = {
            "cancel": "every queued or running job",
            "delete": "every job that is not running",
            "retry": "every failed job",
        }[self.action]
        return f"{verb} {what} matching {self.described()}?"

    def described(self) -> str:
        """The filters as text: ``status failed, kind report``."""
        parts = [
            f"{name} {value}"
            for name, value in (
                ("status", self.filters.status),
                ("kind", self.filters.kind),
                ("queue", self.filters.queue),
            )
            if value is not None
        ]
        return ", ".join(parts)


def parse(form: Mapping[str, str], ids: Sequence[str]) -> Bulk:
    """The bulk action of a form (ids: its repeated ``id`` fields); BadBulk says what is wrong."""
    action = form.get("action", "")
    if action not in ACTIONS:
        raise BadBulk(f"action: want one of {', '.join(ACTIONS)}")
    by_filter = form.get("scope") == "filter"
    try:
        filters = views.parse_filters(
            {name: form.get(name, "") for name in ("status", "kind", "queue")}
        )
    except views.BadFilter as err:
        raise BadBulk(str(err)) from None
    if by_filter:
        if filters.status is None and filters.kind is None and filters.queue is None:
            raise BadBulk("choose a status, kind or queue first: a bulk action needs a filter")
        if action == "cancel" and filters.status not in (None, Status.QUEUED, Status.RUNNING):
            raise BadBulk("only queued and running jobs can be cancelled")
        if action == "retry" and filters.status not in (None, Status.FAILED):
            raise BadBulk("retry by filter queues failed jobs again: filter on status failed")
        return Bulk(action, (), filters, True)
    chosen = tuple(dict.fromkeys(i for i in ids if i))
    if not chosen:
        raise BadBulk("select at least one job")
    if len(chosen) > MAX_SELECTED:
        raise BadBulk(f"select at most {MAX_SELECTED} jobs at once")
    return Bulk(action, chosen, filters, False)


async def run(store: Store, bulk: Bulk) -> int:
    """Does the bulk action through the store's public operations; returns how many jobs changed."""
    f = bulk.filters
    if bulk.by_filter:
        if bulk.action == "cancel":
            done = await store.acancel_matching(status=f.status, kind=f.kind, queue=f.queue)
            return done.cancelled + done.requested
        if bulk.action == "delete":
            return await store.adelete_matching(status=f.status, kind=f.kind, queue=f.queue)
        return await store.aretry_failed(kind=f.kind, queue=f.queue)
    if bulk.action == "cancel":
        cancels = await store.acancel_many(bulk.ids)
        return sum(result != CancelResult.FINISHED for result in cancels.values())
    if bulk.action == "delete":
        deletes = await store.adelete_many(bulk.ids)
        return sum(result == DeleteResult.DELETED for result in deletes.values())
    retried = 0
    for job_id in bulk.ids:
        try:
            retried += await store.aretry(job_id) == RetryResult.RETRIED
        except LookupError:
            continue
    return retried
