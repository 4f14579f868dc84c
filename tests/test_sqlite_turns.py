"""The turns the processes sharing a SQLite file take at its write lock (``Turns``).

Two ``Turns`` on one file contend as two processes do: each holds its own
open file, and an flock belongs to the open file. Nothing here sleeps to
wait: a test waits on the state it expects, with a generous limit.
"""

import fcntl
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from seam import create, exists, new_id

from jobtable._engines.sqlite.engine import SQLiteEngine
from jobtable._engines.sqlite.turns import Turns

LIMIT = 10.0
"""Seconds a test waits for a thread before it fails; never a timing claim."""


def wait_for(check: Callable[[], bool]) -> None:
    """Waits until check() is true; fails the test after LIMIT seconds."""
    deadline = time.monotonic() + LIMIT
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {check}")
        time.sleep(0.001)


def holding(turns: Turns) -> tuple[threading.Event, threading.Event, threading.Thread]:
    """A thread that enters turns' turn and stays in it: (entered, leave, thread)."""
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with turns.turn():
            entered.set()
            leave.wait(LIMIT)

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(LIMIT)
    return entered, leave, thread


def gave_up(path: Path, *, close_while_waiting: bool = False) -> tuple[Turns, Turns]:
    """Two Turns on path; the second, with no time to wait, ran without its turn.

    The first held the turn meanwhile, and has released it since; the
    second's wait in the kernel may still be under way. With
    close_while_waiting the second was closed before the turn came free.
    """
    first, second = Turns(path, 60), Turns(path, 0)
    _, leave, holder = holding(first)
    ran = False
    with second.turn():
        ran = True
    assert ran
    if close_while_waiting:
        second.close()
    leave.set()
    holder.join()
    return first, second


def test_a_turn_waits_in_the_kernel_until_the_holder_releases_it(tmp_path: Path) -> None:
    first, second = Turns(tmp_path / "app.db", 60), Turns(tmp_path / "app.db", 60)
    _, leave, holder = holding(first)
    entered = threading.Event()

    def take() -> None:
        with second.turn():
            entered.set()

    taker = threading.Thread(target=take)
    taker.start()
    wait_for(lambda: second._waiting is not None)
    assert not entered.is_set()
    leave.set()
    assert entered.wait(LIMIT)
    for thread in (holder, taker):
        thread.join()
    first.close()
    second.close()


def test_past_the_timeout_the_block_runs_without_the_turn_and_the_late_turn_is_let_go(
    tmp_path: Path,
) -> None:
    path = tmp_path / "app.db"
    first, second = gave_up(path)
    # The wait given up got the turn later, and released it: it is free.
    wait_for(lambda: second._waiting is None)
    fd = os.open(f"{path}-turn", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    first.close()
    second.close()


def test_a_write_begins_only_in_its_processs_turn(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    engine = SQLiteEngine.open(path)
    other = Turns(path, 60)  # another process's writer, as the kernel sees it
    _, leave, holder = holding(other)
    job = new_id()
    written = threading.Event()

    def write() -> None:
        engine.write(create(job))
        written.set()

    writer = threading.Thread(target=write)
    writer.start()
    wait_for(lambda: engine._writer._turns._waiting is not None)
    assert not written.is_set()
    leave.set()
    assert written.wait(LIMIT)
    for thread in (holder, writer):
        thread.join()
    assert exists(engine, job)
    engine.close()
    other.close()


def test_writes_go_on_without_turns_where_the_turn_file_cannot_be_made(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    (tmp_path / "app.db-turn").mkdir()
    engine = SQLiteEngine.open(path)
    job = new_id()
    engine.write(create(job))
    assert exists(engine, job)
    engine.close()


def test_closing_while_a_turn_is_awaited_closes_the_file_once_the_wait_ends(
    tmp_path: Path,
) -> None:
    first, second = gave_up(tmp_path / "app.db", close_while_waiting=True)
    wait_for(lambda: second._waiting is None)
    with second.turn():  # closed: no turn is taken
        pass
    first.close()
