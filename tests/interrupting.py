"""A synchronous write from the main thread, interrupted by a signal while it waits in a batch.

Group commit parks the synchronous callers of a batch and wakes them in
turn, each by the one before; a caller interrupted while it waits
(KeyboardInterrupt, which only the main thread gets) must neither strand
the callers after it nor lose its own write. ``interrupt_queued_write``
sets that up the same way for every engine.
"""

import signal
import threading
from collections.abc import Callable

Join = Callable[[], list[object]]
"""Joins writer threads started earlier; gives each one's result or exception."""


def interrupt_queued_write(
    *,
    write: Callable[[], object],
    start_before: Callable[[], Join],
    start_after: Callable[[], Join],
    wait_for_queued: Callable[[int], None],
    finish_leader: Callable[[], None],
    once_batch_delivered: bool,
    limit: float,
) -> tuple[list[object], bool]:
    """Runs write in the main thread, queued behind a leader between two other writes.

    A leader already holds the writer. start_before's write queues first,
    then write, then start_after's. A signal arrives while the main thread
    waits; its handler raises KeyboardInterrupt at once, or, with
    once_batch_delivered, only once the batch committed and the write before
    returned (so the main thread's wake was already given). Returns the
    outcome of the write after and whether the main thread got the
    KeyboardInterrupt.
    """
    assert threading.current_thread() is threading.main_thread()
    main = threading.get_ident()
    handler_entered = threading.Event()
    before_returned = threading.Event()
    after: list[object] = []

    def handler(signum: int, frame: object) -> None:
        handler_entered.set()
        if once_batch_delivered:
            assert before_returned.wait(limit)
        raise KeyboardInterrupt

    before = start_before()
    wait_for_queued(1)

    def orchestrate() -> None:
        wait_for_queued(2)  # the main thread's write is queued
        rest = start_after()
        wait_for_queued(3)
        signal.pthread_kill(main, signal.SIGUSR1)
        assert handler_entered.wait(limit)
        finish_leader()
        assert before() == [None]
        before_returned.set()
        after.extend(rest())

    helper = threading.Thread(target=orchestrate)
    previous = signal.signal(signal.SIGUSR1, handler)
    interrupted = False
    try:
        helper.start()
        try:
            write()
        except KeyboardInterrupt:
            interrupted = True
    finally:
        signal.signal(signal.SIGUSR1, previous)
    helper.join(limit * 2)
    assert not helper.is_alive()
    return after, interrupted
