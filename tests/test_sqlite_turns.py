"""The turns the processes sharing a SQLite file take at its write lock (``Turns``).

Two ``Turns`` on one file contend as two processes do: each holds its own
open file, and an flock belongs to the open file. Nothing here sleeps to
wait: a test waits on the state it expects, with a generous limit.
"""

import threading
from pathlib import Path

from seam import create, exists, new_id

from jobtable._engines.sqlite.engine import SQLiteEngine
from jobtable._engines.sqlite.turns import Turns

LIMIT = 10.0
"""Seconds a test waits for a thread before it fails; never a timing claim."""


def test_a_write_waits_for_its_processs_turn(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    engine = SQLiteEngine.open(path)
    other = Turns(path)  # another process's writer, as the kernel sees it
    job = new_id()
    with other.turn():
        writer = threading.Thread(target=engine.write, args=(create(job),))
        writer.start()
        # The write waits for the turn: it has not begun.
        writer.join(0.2)
        assert writer.is_alive()
        assert not exists(engine, job)
    writer.join(LIMIT)
    assert not writer.is_alive()
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


def test_a_closed_turns_takes_no_turn(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    first, second = Turns(path), Turns(path)
    first.close()
    with first.turn(), second.turn():
        pass
    second.close()
