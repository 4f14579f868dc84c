"""The benchmark's job kinds, shared by the parent and its worker processes."""

import asyncio
import time

import pydantic

import jobtable


class Ping(pydantic.BaseModel):
    """A payload carrying the time its job was enqueued (0 for no-op jobs)."""

    t: float = 0.0


GO = jobtable.Signal("bench-go", Ping)
"""What the ``signalled`` jobs wait for, under their own id; its payload's t: its send time."""


class Kinds:
    """The benchmark's kinds registered on one runner, and what their handlers saw.

    ``noop`` does nothing but count, so what is left is the runner's own cost;
    ``inproc`` records perf_counter() at its start minus the payload's time
    (same process); ``latency`` returns time.time() at its start minus the
    payload's time as its result (another process enqueued it); ``waited``
    returns time.time() as it returns, for a waiter in another process;
    ``signalled`` waits for GO under its id, then returns time.time() at its
    resume minus the signal's send time.
    """

    def __init__(self, runner: jobtable.Runner) -> None:
        self.runner = runner
        self.started = 0
        self.expected = 0
        self.all_started: asyncio.Event | None = None
        self.latencies: list[float] = []
        self.noop = runner.register("noop", self._noop)
        self.inproc = runner.register("inproc", self._inproc)
        self.latency = runner.register("latency", self._latency)
        self.lateness: list[float] = []
        self.scheduled = runner.register("scheduled", self._scheduled)
        self.waited = runner.register("waited", self._waited)
        self.signalled = runner.register("signalled", self._signalled)

    def expect(self, count: int) -> asyncio.Event:
        """Returns an event set once count more handlers have started."""
        self.started = 0
        self.expected = count
        self.all_started = asyncio.Event()
        if count == 0:
            self.all_started.set()
        return self.all_started

    def _count(self) -> None:
        self.started += 1
        if self.started == self.expected and self.all_started is not None:
            self.all_started.set()

    async def _noop(self, ctx: jobtable.JobContext[None], payload: Ping) -> None:
        self._count()

    async def _inproc(self, ctx: jobtable.JobContext[None], payload: Ping) -> None:
        self.latencies.append(time.perf_counter() - payload.t)
        self._count()

    async def _latency(self, ctx: jobtable.JobContext[float], payload: Ping) -> float:
        return time.time() - payload.t

    async def _waited(self, ctx: jobtable.JobContext[float], payload: Ping) -> float:
        return time.time()

    async def _signalled(self, ctx: jobtable.JobContext[float], payload: Ping) -> float:
        go = await ctx.wait_for(GO, key=ctx.id)
        return time.time() - go.t

    async def _scheduled(self, ctx: jobtable.JobContext[None], payload: Ping) -> None:
        # payload.t is the job's run_at, as time.time(): what is left is lateness.
        self.lateness.append(time.time() - payload.t)
        self._count()


def make_runner(
    store: jobtable.Store, *, workers: int, name: str, poll_interval: float = 1.0
) -> Kinds:
    """Returns a runner with the benchmark's kinds registered."""
    return Kinds(jobtable.Runner(store, workers=workers, name=name, poll_interval=poll_interval))
