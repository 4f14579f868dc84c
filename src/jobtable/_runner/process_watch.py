"""The process watch: learns from the kernel when another runner of this host ends."""

import asyncio
import contextlib
import logging
import os
from collections.abc import Sequence

from jobtable._runner.process import ProcessId, gone
from jobtable._runner.registration import EndGoneRunners, Peer
from jobtable._store import Store

PROBE_INTERVAL = 0.5
"""Seconds between two looks at the processes the watch cannot be told about (no pidfd)."""


def _open_pidfd(process: str) -> int | None:
    """A pidfd of the pid in process (``ProcessId`` text), or None where none can be opened.

    None also for a pid no process has. The caller checks afterwards that
    the pid still is process (its start time): a process that started before
    the open and has the pid now had it at the open, so the pidfd is its.
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    pid_text = process.partition(" ")[0]
    if pidfd_open is None or not pid_text.isdigit():
        return None
    try:
        fd: int = pidfd_open(int(pid_text))
    except OSError:
        return None
    return fd


class ProcessWatch:
    """Knows this host's other runners, and ends those whose process is gone.

    Maintenance tells it the runners of this host it found at each round
    (know). The kernel tells it when one of their processes ends (a pidfd
    becomes readable), so it reads nothing and wakes for nothing while they
    run; it then checks that process (``gone``) and, in one write,
    interrupts that runner's jobs. A process it cannot open a pidfd for
    (Linux before 5.3, a sandbox refusing the call) it probes instead, every
    PROBE_INTERVAL seconds, when Maintenance calls probe. A failed write is
    logged and tried again at the next probe.
    """

    def __init__(self, store: Store, runner: str, logger: logging.Logger) -> None:
        self._store = store
        self._runner = runner
        self._logger = logger
        self._me: ProcessId | None = None
        self._fds: dict[Peer, int] = {}
        self._probed: list[Peer] = []
        self._probe: asyncio.Task[None] | None = None

    @property
    def watching(self) -> bool:
        """True while a runner of this host needs probing: no pidfd, or its process ended."""
        return bool(self._probed)

    def know(self, me: ProcessId | None, peers: Sequence[Peer]) -> None:
        """Watches peers, the other runners of me's host, in place of those it watched.

        Call it on the event loop the watch runs on.
        """
        self._me = me
        wanted = set(peers) if me is not None else set()
        for peer in [p for p in self._fds if p not in wanted]:
            self._forget(peer)
        self._probed = [p for p in self._probed if p in wanted]
        loop = asyncio.get_running_loop()
        for peer in wanted - set(self._fds) - set(self._probed):
            fd = _open_pidfd(peer.process)
            if fd is not None and me is not None and not gone(me.host, peer.process):
                self._fds[peer] = fd
                loop.add_reader(fd, self._ended, peer)
                continue
            if fd is not None:
                os.close(fd)
            self._probed.append(peer)

    def _forget(self, peer: Peer) -> None:
        fd = self._fds.pop(peer)
        with contextlib.suppress(RuntimeError):  # the loop closed
            asyncio.get_running_loop().remove_reader(fd)
        os.close(fd)

    def _ended(self, peer: Peer) -> None:
        """A pidfd became readable: peer's process ended; probe it now."""
        self._forget(peer)
        self._probed.append(peer)
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self.probe())

    async def probe(self) -> None:
        """Ends the probed runners whose process is gone; a failed write is logged and retried."""
        me = self._me
        ended = [p for p in self._probed if me is not None and gone(me.host, p.process)]
        if me is None or not ended:
            return
        try:
            interrupted, _ = await self._store.engine.awrite(
                EndGoneRunners(me.host, ended, self._store.clock)
            )
        except Exception:
            extra = {"runner": self._runner}
            self._logger.exception("end runners whose process is gone", extra=extra)
            return
        self._probed = [p for p in self._probed if p not in ended]
        log_gone(self._logger, self._runner, interrupted)

    async def close(self) -> None:
        """Stops watching; waits for a probe under way."""
        for peer in list(self._fds):
            self._forget(peer)
        self._probed = []
        if self._probe is not None:
            with contextlib.suppress(Exception):
                await self._probe


INTERRUPTED_FATE = (
    "each is retried while attempts remain, and otherwise fails as interrupted "
    "(is cancelled if its cancel was requested)"
)
"""What the warnings that count interrupted jobs say becomes of each of them."""


def log_gone(logger: logging.Logger, runner: str, interrupted: int) -> None:
    """Logs, as a warning, that interrupted jobs of runners whose process is gone were ended."""
    if interrupted:
        logger.warning(
            "interrupted %d jobs of runners whose process ended: " + INTERRUPTED_FATE,
            interrupted,
            extra={"count": interrupted, "runner": runner},
        )
