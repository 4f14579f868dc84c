"""The process watch: between heartbeats, asks the kernel whether this host's other runners run."""

import logging
from collections.abc import Sequence

from jobtable._runner.operations import EndGoneRunners, Peer
from jobtable._runner.process import ProcessId, gone
from jobtable._store import Store

PROBE_INTERVAL = 0.5
"""Seconds between two looks at the processes of this host's other runners."""


class ProcessWatch:
    """Knows this host's other runners, and ends those whose process is gone.

    Maintenance tells it the runners of this host it found at each round
    (know), and calls probe every PROBE_INTERVAL seconds while it knows
    any. A probe reads nothing from the store: it asks the kernel about
    each process, and writes only when one is gone, to interrupt that
    runner's jobs. So a runner killed on this host has its jobs interrupted
    within about PROBE_INTERVAL, while an idle runner with no peer here
    costs nothing more than its heartbeat.
    """

    def __init__(self, store: Store, runner: str, logger: logging.Logger) -> None:
        self._store = store
        self._runner = runner
        self._logger = logger
        self._me: ProcessId | None = None
        self._peers: list[Peer] = []

    @property
    def watching(self) -> bool:
        """True while it knows of another runner of this host to watch."""
        return bool(self._peers)

    def know(self, me: ProcessId | None, peers: Sequence[Peer]) -> None:
        """Watches peers, the other runners of me's host, in place of those it watched."""
        self._me = me
        self._peers = list(peers) if me is not None else []

    async def probe(self) -> None:
        """Ends the watched runners whose process is gone; a failed write is logged and retried."""
        me = self._me
        if me is None or not any(gone(me.host, peer.process) for peer in self._peers):
            return
        op = EndGoneRunners(me.host, self._peers, self._store.clock)
        try:
            interrupted, self._peers = await self._store.engine.awrite(op)
        except Exception:
            extra = {"runner": self._runner}
            self._logger.exception("end runners whose process is gone", extra=extra)
            return
        log_gone(self._logger, self._runner, interrupted)


def log_gone(logger: logging.Logger, runner: str, interrupted: int) -> None:
    """Logs, as a warning, that interrupted jobs of runners whose process is gone were ended."""
    if interrupted:
        logger.warning(
            "failed %d jobs of runners whose process ended, as interrupted",
            interrupted,
            extra={"count": interrupted, "runner": runner},
        )
