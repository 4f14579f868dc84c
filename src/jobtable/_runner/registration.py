"""The runner's registration as store operations: start, heartbeat, crash recovery, stop.

A runner registers at start and interrupts the jobs that it (under its name)
and dead runners left running; each heartbeat renews its lease, interrupts
the jobs of runners whose lease expired or whose process is gone, and
prunes; at stop it deregisters. Like the runner's other operations
(``jobtable._runner.run_operations``), each runs in one transaction, and the
lease arithmetic takes one reading of the clock inside it (a write that
waited for a lock between two readings would compare a heartbeat it wrote
before the wait with a cutoff taken after it).
"""

import dataclasses
import datetime
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from jobtable._engines.base import Queries
from jobtable._engines.dependencies import settle_stranded
from jobtable._engines.rows import Outcome
from jobtable._job import MESSAGE_INTERRUPTED
from jobtable._operations import cancel_overdue_workflows
from jobtable._operator.admin import PruneJobs
from jobtable._runner.completer import Held
from jobtable._runner.contact import StoreContact
from jobtable._runner.process import ProcessId, gone
from jobtable._signal import SIGNAL_RETENTION
from jobtable._values import timestamp

Clock = Callable[[], datetime.datetime]

PRUNE_BATCH = 200
"""How many finished jobs one write of the runner's pruning deletes at most.

Small, because on SQLite a write holds every process's claims while it
commits: 1,000 deletes took 22 ms with their fsync (each touches a random
page of the id index) against 4 ms for 200, at about the same cost a job.
"""
PRUNE_PAUSE = 0.01
"""Seconds between two of the runner's pruning writes: up to 20,000 jobs a second."""


def _before(now: str, delta: datetime.timedelta) -> str:
    return timestamp(datetime.datetime.fromisoformat(now) - delta)


def _end_dead_runners(q: Queries, name: str, stamp: str, lease: float) -> int:
    """Interrupts the running jobs of runners dead for lease seconds and forgets those runners.

    Never those of the runner named name, which asks: it is alive. Returns
    how many jobs it interrupted.
    """
    dead = q.interrupt_jobs_of_dead_runners(
        error=MESSAGE_INTERRUPTED, now=stamp, lease=lease, runner=name
    )
    q.delete_dead_runners(now=stamp, lease=lease, name=name)
    if dead:
        settle_stranded(q, stamp)
    return dead


class Peer(NamedTuple):
    """A runner of this host, and the process it recorded."""

    name: str
    process: str


def _end_gone_runners(
    q: Queries, host: str, peers: Sequence[Peer], stamp: str
) -> tuple[int, list[Peer]]:
    """Interrupts the running jobs of the peers whose process is gone, and forgets those peers.

    A peer is ended only while its row still records the process that is
    gone: a process that registered under its name since holds the name's
    jobs now. Returns how many jobs it interrupted and the peers whose
    process still runs.
    """
    interrupted = 0
    running = []
    for peer in peers:
        if not gone(host, peer.process):
            running.append(peer)
        elif q.delete_runner_process(name=peer.name, host=host, process=peer.process):
            interrupted += q.interrupt_running_jobs(
                error=MESSAGE_INTERRUPTED, now=stamp, runner=peer.name
            )
    if interrupted:
        settle_stranded(q, stamp)
    return interrupted, running


def _end_gone_peers(
    q: Queries, me: ProcessId | None, name: str, stamp: str
) -> tuple[int, list[Peer]]:
    """Ends the other runners of me's host whose process is gone (see ``_end_gone_runners``).

    Runner name runs as process me; None (the machine cannot tell) ends none.
    """
    if me is None:
        return 0, []
    peers = [
        Peer(row.name, row.process)
        for row in q.list_runners_on_host(host=me.host, name=name)
        if row.process is not None
    ]
    return _end_gone_runners(q, me.host, peers, stamp)


class Started(NamedTuple):
    """What StartRunner found and did."""

    live_namesake: str | None
    """The heartbeat of an earlier runner of this name that was still within its lease."""
    interrupted: int
    """How many running jobs, of the earlier runner and of dead runners, it interrupted."""
    gone: int
    """How many running jobs of runners of this host whose process is gone it interrupted."""
    peers: list[Peer]
    """The other runners of this host whose process still runs."""


@dataclasses.dataclass(frozen=True, slots=True)
class StartRunner:
    """The write that registers a runner and interrupts the jobs it and dead runners left running.

    The runner runs as process me (None: the machine cannot tell). A runner
    whose heartbeat is older than lease is dead, and so is one of this host
    whose process is gone, whatever its heartbeat. An interrupted job goes
    back to its queue while attempts remain, and fails as interrupted after
    its last.
    """

    name: str
    lease: datetime.timedelta
    clock: Clock
    me: ProcessId | None

    def __call__(self, q: Queries) -> Started:
        stamp = timestamp(self.clock())
        lease = self.lease.total_seconds()
        previous = q.get_runner(name=self.name, now=stamp, lease=lease)
        namesake = None
        if previous is not None and previous.alive:
            namesake = timestamp(previous.heartbeat_at)
        me = self.me
        host, process = (None, None) if me is None else me
        q.register_runner(name=self.name, now=stamp, host=host, process=process)
        own = q.interrupt_running_jobs(error=MESSAGE_INTERRUPTED, now=stamp, runner=self.name)
        if own:
            settle_stranded(q, stamp)
        ended, peers = _end_gone_peers(q, me, self.name, stamp)
        dead = _end_dead_runners(q, self.name, stamp, lease)
        return Started(namesake, own + dead, ended, peers)


class Maintained(NamedTuple):
    """What a round of Maintain did."""

    lost_lease: bool
    """The runner's registration was gone (its lease expired), so it registered again."""
    dead: int
    """How many running jobs of dead runners it interrupted."""
    lost: int
    """How many jobs this runner claimed but never received that it put back, attempts unused."""
    gone: int
    """How many running jobs of runners of this host whose process is gone it interrupted."""
    peers: list[Peer]
    """The other runners of this host whose process still runs."""
    pruned: int
    """How many finished jobs it deleted: PRUNE_BATCH when more may be left."""
    prune_before: str | None
    """The finish time before which it pruned, None without retention."""


@dataclasses.dataclass(frozen=True, slots=True)
class KeyReport:
    """The secret key ids a runner lacked, now and as its row last recorded them.

    Each is a sorted JSON array, or None for none (see ``MissingKeys.report``).
    """

    now: str | None
    recorded: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class Maintain:
    """The write that renews a runner's lease, interrupts stale jobs and prunes old ones.

    held is the jobs the runner has, read on its event loop before this
    write was asked for, and me its process (see ``StartRunner``). A runner
    whose heartbeat is older than lease is dead, and a job running under
    this runner's name is lost when held does not have it and its claim is
    older than lease and than held.since (a claim of its own whose reply is
    still on its way is never lost): no handler ran it, so it goes back to
    its queue with its attempt unused, as a snooze would put it. Finished
    jobs older than retention are deleted, PRUNE_BATCH at most (None keeps
    them), and the workflows left with no job; signals older than
    signal_retention are deleted (None keeps them). The write was asked for at started, on
    contact's clock: stale jobs are interrupted (or put back) only when
    contact says this runner may judge
    (see ``StoreContact``), since until then a stale heartbeat may be a peer
    that could not reach the store either. A runner of this host whose
    process is gone is ended at once: that needs no contact with the store,
    since no store outage revives a process. The secret key ids the runner
    lacked are recorded on its row when they differ from what it last
    recorded, or when it registers again (which clears them).
    """

    name: str
    held: Held
    lease: datetime.timedelta
    retention: datetime.timedelta | None
    clock: Clock
    contact: StoreContact
    started: float
    me: ProcessId | None
    missing_keys: KeyReport
    signal_retention: datetime.timedelta | None = SIGNAL_RETENTION

    def __call__(self, q: Queries) -> Maintained:
        judge = self.contact.may_judge(self.started, time.monotonic())
        stamp = timestamp(self.clock())
        me = self.me
        lost_lease = not q.heartbeat_runner(now=stamp, name=self.name)
        if lost_lease:
            host, process = (None, None) if me is None else me
            q.register_runner(name=self.name, now=stamp, host=host, process=process)
        keys = self.missing_keys
        if keys.now != keys.recorded or (lost_lease and keys.now is not None):
            q.set_runner_missing_keys(missing_keys=keys.now, name=self.name)
        ended, peers = _end_gone_peers(q, me, self.name, stamp)
        dead, lost = self._end_stale(q, stamp) if judge else (0, 0)
        cancel_overdue_workflows(q, stamp)
        pruned, before = 0, None
        if self.retention is not None:
            before = _before(stamp, self.retention)
            pruned = PruneJobs(before, PRUNE_BATCH)(q)
        if self.signal_retention is not None:
            q.prune_signals(before=_before(stamp, self.signal_retention))
        return Maintained(lost_lease, dead, lost, ended, peers, pruned, before)

    def _end_stale(self, q: Queries, stamp: str) -> tuple[int, int]:
        """Interrupts dead runners' jobs; puts back its claims older than the lease, never received.

        Returns how many of each it interrupted or put back.
        """
        dead = _end_dead_runners(q, self.name, stamp, self.lease.total_seconds())
        # A claim can commit while its reply is lost (a connection dropped at
        # COMMIT, a session the server ended): the job runs under this name,
        # but no worker has it. Once it is older than the lease and still not
        # held, it goes back to its queue, its attempt unused (its handler
        # never ran: with one attempt, interrupting it would fail it unrun).
        # Its claim was stamped by this runner's own clock, so the runner's
        # clock measures its age. A claim stamped at or after held.since may
        # still be on its way: it may have waited
        # (for a lock, a stopped process) past the lease before it committed,
        # and its reply reach the runner after held was read. Its jobs are
        # spared, so a live runner never fails a job it runs.
        cutoff = min(datetime.datetime.fromisoformat(stamp) - self.lease, self.held.since)
        lost = [
            row
            for row in q.list_running_jobs(runner=self.name, before=timestamp(cutoff))
            if row.id not in self.held.ids
        ]
        if lost:
            # As a snooze from now: queued again, one more attempt allowed
            # (cancelled instead when its cancel was requested).
            back = [Outcome(row.id, row.attempt, "queued", None, None, stamp) for row in lost]
            q.finish_and_claim_jobs(
                outcomes=back, runner=self.name, queue="", now=stamp, max_jobs=0
            )
            settle_stranded(q, stamp)
        return dead, len(lost)


@dataclasses.dataclass(frozen=True, slots=True)
class EndGoneRunners:
    """The write that interrupts the jobs of the peers of host whose process is gone.

    Returns how many jobs it interrupted and the peers whose process still runs.
    """

    host: str
    peers: Sequence[Peer]
    clock: Clock

    def __call__(self, q: Queries) -> tuple[int, list[Peer]]:
        return _end_gone_runners(q, self.host, self.peers, timestamp(self.clock()))


@dataclasses.dataclass(frozen=True, slots=True)
class InterruptAttempts:
    """The write that interrupts jobs as a restart would, each while the claim of its attempt holds.

    attempts maps job ids to the attempts claimed; a job retries while
    attempts remain and otherwise fails with MESSAGE_INTERRUPTED. Returns
    how many it interrupted: a job recorded meanwhile is left as it is.
    """

    attempts: dict[str, int]
    clock: Clock

    def __call__(self, q: Queries) -> int:
        stamp = timestamp(self.clock())
        interrupted = sum(
            q.interrupt_job(error=MESSAGE_INTERRUPTED, now=stamp, id=job_id, attempt=attempt)
            for job_id, attempt in self.attempts.items()
        )
        if interrupted:
            settle_stranded(q, stamp)
        return interrupted


class DeleteRunner:
    """The write that deregisters a runner that stopped."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, q: Queries) -> None:
        q.delete_runner(name=self.name)
