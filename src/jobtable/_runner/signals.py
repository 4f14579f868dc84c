"""SIGINT and SIGTERM as calls on the event loop, for a worker process's runner."""

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def handling_signals(on_signal: Callable[[], None]) -> Iterator[None]:
    """Calls on_signal on the running loop at each SIGINT or SIGTERM while inside."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        yield
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
