"""The ``jobtable`` command's application and what every command shares.

A command is one function, decorated with ``@app.command()`` (or
``@jobs.command()`` for ``jobtable jobs …``), in a module that
``jobtable._cli`` imports. It takes ``StoreOption`` (with ``PooledOption``
and ``ListenUrlOption`` after it) and ``JsonOption``,
opens the store with ``opened_store`` (which turns every error into one
line on stderr and exit status 1), and prints with ``emit``. Nothing here
writes SQL: the commands call the Store's public operations, as user code
does.
"""

import contextlib
import datetime
import re
import sys
from collections.abc import Callable, Iterator
from typing import Annotated, NoReturn

import pydantic_core
import typer
from rich.console import Console, RenderableType
from rich.style import StyleType
from rich.table import Table

from jobtable._errors import JobtableError
from jobtable._job import Status
from jobtable._operator import flow_text
from jobtable._store import Store
from jobtable._values import scrub

app = typer.Typer(
    name="jobtable",
    help="Inspect and operate a jobtable queue: jobs, stats, runners, pruning, the schema.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
"""The ``jobtable`` command."""


def _print_version(value: bool) -> None:
    if value:
        from jobtable import __version__

        typer.echo(f"jobtable {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed jobtable's version and exit.",
        ),
    ] = False,
    store_before: Annotated[
        str | None,
        typer.Option(
            "--store",
            show_default=False,
            help="The store, for the command after it (which may give its own --store).",
        ),
    ] = None,
) -> None:
    """Inspect and operate a jobtable queue: jobs, stats, runners, pruning, the schema."""
    if store_before is not None and ctx.invoked_subcommand == "worker":
        fail("jobtable worker runs on its runner's store: --store is not used; leave it out")
    ctx.obj = store_before


def _store_before_the_command(
    ctx: typer.Context, param: typer.CallbackParam, value: str | None
) -> str | None:
    """A command's own --store wins, then one given before the command, then JOBTABLE_STORE."""
    source = ctx.get_parameter_source(param.name or "")
    given_here = source is not None and source.name == "COMMANDLINE"
    before = ctx.find_root().obj
    return value if given_here or not isinstance(before, str) else before


jobs = typer.Typer(help="List, show, cancel, retry and delete jobs.", no_args_is_help=True)
"""The ``jobtable jobs`` group."""
app.add_typer(jobs, name="jobs")

queues = typer.Typer(
    help="List queues; pause, resume, and set or clear their limits.", no_args_is_help=True
)
"""The ``jobtable queues`` group."""
app.add_typer(queues, name="queues")

StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="JOBTABLE_STORE",
        show_envvar=True,
        show_default=False,
        callback=_store_before_the_command,
        help="The store: a SQLite path, sqlite:///path or postgresql://…",
    ),
]
"""The ``--store URL`` option every command takes, or JOBTABLE_STORE from the environment."""

PooledOption = Annotated[
    bool,
    typer.Option(
        "--pooled",
        envvar="JOBTABLE_POOLED",
        show_envvar=True,
        help="The --store URL is a connection pooler's (PgBouncer in transaction or session "
        "mode): prepare no statement, set nothing on a session.",
    ),
]
"""The ``--pooled`` option every command with ``--store`` takes, or JOBTABLE_POOLED (1, true)."""

ListenUrlOption = Annotated[
    str | None,
    typer.Option(
        "--listen-url",
        envvar="JOBTABLE_LISTEN_URL",
        show_envvar=True,
        show_default=False,
        help="With --pooled: a direct URL to the same database, for listening. The commands "
        "and the dashboard never listen (they poll), so they take it only to share the "
        "application's environment.",
    ),
]
"""The ``--listen-url`` option every command with ``--store`` takes, or JOBTABLE_LISTEN_URL."""

JsonOption = Annotated[
    bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")
]
"""The ``--json`` option every command takes."""

console = Console(width=None if sys.stdout.isatty() else 160, markup=False, emoji=False)
"""Where the human tables go: stdout, 160 columns wide when it is not a terminal."""


def fail(message: str, url: str | None = None) -> NoReturn:
    """Prints message as one line on stderr, without url's password, and exits with status 1."""
    text = " ".join(message.split())
    if url:
        text = scrub(text, url)
    sys.stderr.write(f"jobtable: error: {text}\n")
    raise typer.Exit(1)


@contextlib.contextmanager
def opened_store(
    url: str | None, pooled: bool = False, listen_url: str | None = None
) -> Iterator[Store]:
    """Opens the store at url without upgrading it, closes it after; one-line errors.

    pooled and listen_url are the command's --pooled and --listen-url
    (``Store.open``'s). The CLI never creates or upgrades a schema behind a
    deploy's back: ``jobtable migrate`` does that.
    """
    if not url:
        fail("no store: give --store URL or set JOBTABLE_STORE")
    with reporting(url):
        store = Store.open(url, migrate=False, pooled=pooled, listen_url=listen_url)
        try:
            yield store
        finally:
            store.close()


@contextlib.contextmanager
def reporting(url: str | None) -> Iterator[None]:
    """Turns jobtable's errors and bad values inside into ``fail``."""
    try:
        yield
    except (JobtableError, ValueError, TypeError, OSError) as err:
        fail(str(err) or type(err).__name__, url)


def emit(
    value: object, as_json: bool, table: Callable[[], Table | str], *, empty: str = ""
) -> None:
    """Prints value as JSON, or the table (or line) that table builds; empty for no values."""
    if as_json:
        sys.stdout.write(pydantic_core.to_json(value, indent=2).decode() + "\n")
        return
    shown = empty if empty and not value else table()
    if isinstance(shown, str):
        typer.echo(shown)
    else:
        console.print(shown)


def parse_duration(text: str, option: str) -> datetime.timedelta:
    """Returns the duration text gives, such as ``7d``, ``12h``, ``1h30m`` or ``90s``."""
    try:
        return flow_text.parse_duration(text, option)
    except ValueError as err:
        fail(str(err))


def parse_status(text: str | None) -> Status | None:
    """Returns the status text names; a one-line error naming the choices for another."""
    if text is None:
        return None
    try:
        return Status(text)
    except ValueError:
        choices = ", ".join(s.value for s in Status)
        fail(f"--status {text!r}: want one of {choices}")


def when(moment: datetime.datetime | None) -> str:
    """A time as the tables show it: UTC to the second."""
    if moment is None:
        return "-"
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def age(delta: datetime.timedelta | None) -> str:
    """A duration as the tables show it: its two largest units (``3d 4h``, ``5m 2s``)."""
    if delta is None:
        return "-"
    seconds = int(delta.total_seconds())
    units = [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)]
    parts: list[str] = []
    for label, size in units:
        if seconds >= size or (label == "s" and not parts):
            parts.append(f"{seconds // size}{label}")
            seconds %= size
    return " ".join(parts[:2])


_WRAPPED = frozenset({"error", "value", "jobs", "after"})


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _inert(text: str) -> str:
    """Returns text with its control characters (ESC, BEL, ...) written as escapes."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


class _StoredDataTable(Table):
    """A table of stored data: a cell's control characters are shown, not sent to the terminal.

    A kind, a queue or a Failure message may hold an escape sequence, which
    would otherwise reach the operator's terminal as a command. (Rich markup
    in them is shown as written: the console has markup off.)
    """

    def add_row(
        self,
        *renderables: RenderableType | None,
        style: StyleType | None = None,
        end_section: bool = False,
    ) -> None:
        """Adds a row; each str cell with its control characters escaped."""
        cells = [_inert(cell) if isinstance(cell, str) else cell for cell in renderables]
        super().add_row(*cells, style=style, end_section=end_section)


def new_table(*columns: str, title: str | None = None) -> Table:
    """A table with columns: each kept on one line but the long texts (error, value, jobs).

    Its cells are shown as written: neither Rich markup nor control characters in
    stored data take effect.
    """
    table = _StoredDataTable(title=title, header_style="bold")
    for column in columns:
        wrapped = column in _WRAPPED
        table.add_column(column, no_wrap=not wrapped, overflow="fold" if wrapped else "ellipsis")
    return table
