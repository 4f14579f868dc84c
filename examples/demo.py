"""A tour of jobtable: a SQLite file as the queue, two kinds of job, live progress.

It shows, in a few seconds:

- the two kinds declared with ``jobtable.Kind(name, Payload, Result)``, as a
  module shared by a web process and the workers would declare them;
- ``Store.open`` on a SQLite file (``demo.db`` in a new temporary directory,
  or the path given as the first argument), and a ``Runner`` with 3 workers
  that attaches a handler to each kind with ``runner.handler(kind)``;
- an ``async def`` handler ("resize") that publishes a typed partial result,
  ``Progress(done, total)``, after each step, and waits with ``ctx.asleep``;
- a plain ``def`` handler ("audit"), run in a thread, that fails some inputs
  with ``jobtable.Failure`` (its safe message is stored as the job's error)
  and, for one input, raises an ordinary exception whose text holds a fake
  secret: only "internal error" is stored, the traceback goes to the log
  (stderr), and the secret never reaches the database file;
- ``enqueue_many`` and ``enqueue`` through the store before the runner starts
  (the jobs wait for it), and ``aenqueue`` while it runs;
- a live table of every job, read with ``kind.aget(store, id)``: redrawn in place on a
  terminal, one line per change otherwise (e.g. ``make demo | cat``);
- each job's ``model_dump_json()``, a summary, and a graceful stop.

Run it with ``make demo`` or ``.venv/bin/python examples/demo.py [path/to/demo.db]``.
"""

import asyncio
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel

import jobtable

STEP_SECONDS = 0.25
"""How long the resize handler works on each step."""

FAKE_SECRET = "sk_live_DEMO-0000-not-a-real-key"
"""Appears in one handler exception's text: the log shows it, the database must not."""

TIMEOUT_SECONDS = 60.0
"""The demo gives up, and exits 1, if the jobs have not all finished by then."""


# The two kinds: their payload and result types.


class Photo(BaseModel):
    """The payload of a resize job."""

    name: str
    steps: int


class Progress(BaseModel):
    """The result of a resize job, published after each step and returned at the end."""

    done: int
    total: int
    url: str | None = None


class Invoice(BaseModel):
    """The payload of an audit job."""

    number: int
    customer: str
    amount_cents: int


class Verdict(BaseModel):
    """The result of an audit job."""

    approved: bool
    note: str


resizes = jobtable.Kind("resize", Photo, Progress)
audits = jobtable.Kind("audit", Invoice, Verdict)


async def resize(ctx: jobtable.JobContext[Progress], photo: Photo) -> Progress:
    """Works through photo.steps steps, publishing progress after each."""
    for done in range(photo.steps):
        await ctx.apublish(Progress(done=done, total=photo.steps))
        if await ctx.asleep(STEP_SECONDS):
            # The runner is stopping: raising now leaves the job running, and
            # the next start fails it as interrupted.
            raise RuntimeError(f"resize of {photo.name} stopped at step {done}")
    return Progress(done=photo.steps, total=photo.steps, url=f"/thumbs/{photo.name}.webp")


def audit(ctx: jobtable.JobContext[Verdict], invoice: Invoice) -> Verdict:
    """Checks an invoice; runs in one of the runner's threads, as it is a plain def."""
    if ctx.sleep(0.6):  # the slow part: a call to the accounting system
        raise RuntimeError(f"audit of invoice {invoice.number} stopped")
    if not invoice.customer:
        raise jobtable.Failure(f"Invoice {invoice.number}: no customer.")
    if invoice.amount_cents < 0:
        raise jobtable.Failure(f"Invoice {invoice.number}: negative amount.")
    if invoice.number == 1005:
        # A bug or a dependency's error: its text may quote a credential.
        raise ConnectionError(f"payments API refused key {FAKE_SECRET} with 401")
    return Verdict(
        approved=True, note=f"{invoice.amount_cents / 100:.2f} EUR for {invoice.customer}"
    )


# The live table.

FINISHED = (jobtable.Status.SUCCEEDED, jobtable.Status.FAILED)
BAR_WIDTH = 12
RESULT_WIDTH = 38
MIN_RESULT_WIDTH = len("progress / result")
COLORS = {
    jobtable.Status.QUEUED: "\x1b[2m",  # dim
    jobtable.Status.RUNNING: "\x1b[33m",  # yellow
    jobtable.Status.SUCCEEDED: "\x1b[32m",  # green
    jobtable.Status.FAILED: "\x1b[31m",  # red
}
RESET = "\x1b[0m"


def result_cell(job: jobtable.Job[Any]) -> str:
    """Returns the progress bar or the result of job, as one short text."""
    result = job.result
    if isinstance(result, Progress):
        filled = BAR_WIDTH * result.done // max(result.total, 1)
        bar = "█" * filled + "·" * (BAR_WIDTH - filled)
        text = f"{bar} {result.done}/{result.total}"
        return f"{text} {result.url}" if result.url else text
    if isinstance(result, Verdict):
        return f"{'approved' if result.approved else 'rejected'}: {result.note}"
    return "" if result is None else str(result)


def cut(text: str, width: int) -> str:
    """Returns text, ending in an ellipsis if it had to be cut to width characters."""
    return text if len(text) <= width else text[: width - 1] + "…"


class Table:
    """Draws the jobs' rows on stdout: in place on a terminal, as lines of changes otherwise.

    lock serialises drawing with log records, which ``AboveTable`` prints
    above the table.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.live = out.isatty()
        self.color = self.live and "NO_COLOR" not in os.environ
        self.lock = threading.RLock()
        self._height = 0  # lines of the table on screen, under the cursor's line
        self._last: dict[str, str] = {}
        self._started = time.monotonic()

    def row(self, job: jobtable.Job[Any], result_width: int, width: int | None = None) -> str:
        """Returns job's row, cut to width columns, its status coloured on a colour terminal."""
        cells = [job.id[-8:], f"{job.kind:<6}", f"{job.status.value:<9}"]
        result = cut(result_cell(job), result_width)
        line = "  ".join([*cells, f"{result:<{result_width}}", job.error or ""]).rstrip()
        if width is not None:
            line = cut(line, width)
        if self.color:
            # The status is at a fixed place: colour it after cutting, so that
            # the escape codes never count towards the width.
            start = len(cells[0]) + len(cells[1]) + 4
            end = start + len(cells[2])
            line = f"{line[:start]}{COLORS[job.status]}{line[start:end]}{RESET}{line[end:]}"
        return line

    def header(self, result_width: int) -> str:
        return (
            f"{'id':<8}  {'kind':<6}  {'status':<9}  {'progress / result':<{result_width}}  error"
        )

    def draw(self, jobs: Sequence[jobtable.Job[Any]]) -> None:
        elapsed = time.monotonic() - self._started
        with self.lock:
            if self.live:
                # A line wider than the terminal would wrap, and the next
                # redraw would then move up too few lines: cut each line.
                # On a narrow terminal the results give way to the errors.
                width = shutil.get_terminal_size().columns - 1
                errors = max((len(job.error or "") for job in jobs), default=0)
                result_width = min(RESULT_WIDTH, max(width - 31 - errors, MIN_RESULT_WIDTH))
                done = sum(job.status in FINISHED for job in jobs)
                lines = [
                    "",
                    cut(f"{elapsed:5.1f} s  {done}/{len(jobs)} finished", width),
                    cut(self.header(result_width), width),
                    *(self.row(job, result_width, width) for job in jobs),
                ]
                self._erase()
                self.out.write("".join(f"\x1b[2K{line}\n" for line in lines))
                self._height = len(lines)
            else:
                if not self._last:
                    self.out.write(f"{'time':>6}  {self.header(RESULT_WIDTH)}\n")
                for job in jobs:
                    line = self.row(job, RESULT_WIDTH)
                    if self._last.get(job.id) != line:
                        self._last[job.id] = line
                        self.out.write(f"{elapsed:5.2f}s  {line}\n")
            self.out.flush()

    def erase(self) -> None:
        """Clears the table from a terminal, so that other output can take its place."""
        with self.lock:
            self._erase()
            self.out.flush()

    def _erase(self) -> None:
        if self.live and self._height:
            self.out.write(f"\x1b[{self._height}F\x1b[J")
        self._height = 0

    def __enter__(self) -> "Table":
        if self.live:
            self.out.write("\x1b[?25l")  # hide the cursor while redrawing
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.out.write("\x1b[?25h")
            self.out.flush()


class AboveTable(logging.StreamHandler[TextIO]):
    """Writes log records to stderr above the live table, which is then drawn again below."""

    def __init__(self, table: Table) -> None:
        super().__init__(sys.stderr)
        self.table = table

    def emit(self, record: logging.LogRecord) -> None:
        with self.table.lock:
            self.table.erase()
            super().emit(record)


class ShortFormatter(logging.Formatter):
    """``LEVEL name: message [kind job=… count=…]``.

    jobtable puts a record's details in structured fields (``extra``); this
    shows the job's kind and short id, and a count, when the record has them.
    """

    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        fields = [str(getattr(record, "kind", ""))]
        if job_id := getattr(record, "job_id", None):
            fields.append(f"job={str(job_id)[-8:]}")
        if (count := getattr(record, "count", None)) is not None:
            fields.append(f"count={count}")
        details = " ".join(field for field in fields if field)
        text = super().formatMessage(record)
        return f"{text} [{details}]" if details else text


# The program.


async def watch(
    store: jobtable.Store,
    runner: jobtable.Runner,
    tracked: list[tuple[str, jobtable.Kind[Any, Any]]],
    table: Table,
) -> list[jobtable.Job[Any]]:
    """Starts the runner, draws the jobs until all have finished, and stops the runner.

    On Ctrl-C, which cancels this task, it stops the runner gracefully too.
    """
    await runner.start()
    try:
        # A job enqueued while the runner runs wakes an idle worker at once.
        late = await resizes.aenqueue(store, Photo(name="late", steps=4))
        tracked.append((late, resizes))
        deadline = time.monotonic() + TIMEOUT_SECONDS
        while True:
            jobs = [await kind.aget(store, job_id) for job_id, kind in tracked]
            table.draw(jobs)
            if all(job.status in FINISHED for job in jobs) or time.monotonic() > deadline:
                return jobs
            await asyncio.sleep(0.1)
    finally:
        runner.stop()
        await runner.wait()


def main(argv: Sequence[str]) -> int:
    if len(argv) > 1:
        path = Path(argv[1])
    else:
        path = Path(tempfile.mkdtemp(prefix="jobtable-demo-")) / "demo.db"
    table = Table(sys.stdout)
    handler = AboveTable(table)
    handler.setFormatter(ShortFormatter())
    logger = logging.getLogger("jobtable")
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False

    print(f"database: {path.resolve()} (kept; look inside with sqlite3)")
    print("log: stderr, WARNING and above")
    with jobtable.Store.open(path) as store:
        runner = jobtable.Runner(store, workers=3)
        runner.handler(resizes)(resize)
        runner.handler(audits)(audit)

        # Enqueued before start: the jobs wait in the table for the workers.
        tracked: list[tuple[str, jobtable.Kind[Any, Any]]] = []
        photos = [Photo(name=name, steps=steps) for name, steps in [("beach", 6), ("cat", 3)]]
        tracked += [(job_id, resizes) for job_id in resizes.enqueue_many(store, photos)]
        invoices = [
            Invoice(number=1001, customer="Acme", amount_cents=12_500),
            Invoice(number=1002, customer="", amount_cents=9_900),
            Invoice(number=1003, customer="Globex", amount_cents=-400),
            Invoice(number=1004, customer="Initech", amount_cents=31_415),
            Invoice(number=1005, customer="Umbrella", amount_cents=7_000),
        ]
        tracked += [(audits.enqueue(store, invoice), audits) for invoice in invoices]
        tracked += [(resizes.enqueue(store, Photo(name="mountain", steps=8)), resizes)]

        with table:
            try:
                jobs = asyncio.run(watch(store, runner, tracked, table))
            except KeyboardInterrupt:
                table.draw([kind.get(store, job_id) for job_id, kind in tracked])
                print(
                    "\ninterrupted: the runner stopped; jobs still running fail at the next start"
                )
                return 130

        print("\njobs as an API would return them (store.get(id).model_dump_json()):")
        for job_id, _ in tracked:
            print(store.get(job_id).model_dump_json())
    succeeded = sum(job.status is jobtable.Status.SUCCEEDED for job in jobs)
    failed = sum(job.status is jobtable.Status.FAILED for job in jobs)
    unfinished = len(jobs) - succeeded - failed
    print(
        f"\n{succeeded} succeeded, {failed} failed"
        + (f", {unfinished} unfinished" if unfinished else "")
    )

    # The store is closed, so everything it wrote is in these files.
    leaked = [
        p.name
        for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))
        if p.exists() and FAKE_SECRET.encode() in p.read_bytes()
    ]
    if leaked:
        print(f"the fake secret was written to {', '.join(leaked)}!", file=sys.stderr)
        return 1
    print(
        f"the fake secret {FAKE_SECRET!r} is only in the log (stderr), in no file of the database"
    )
    return 1 if unfinished else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
