"""The commands that serve: ``jobtable worker`` runs a runner, ``jobtable dashboard`` the dashboard.

``jobtable worker module:runner`` imports an application's runner and runs it.
``jobtable dashboard`` serves the web dashboard of a store with uvicorn.

Like ``celery -A`` or ``arq``: the runner, its store and its handlers are
the application's own; the command only finds it and calls ``run()``, which
stops gracefully on SIGINT or SIGTERM.
"""

import datetime
import importlib
import inspect
import json
import logging
import os
import reprlib
import sys
from typing import Annotated

import typer

from jobtable._cli.app import (
    ListenUrlOption,
    PooledOption,
    StoreOption,
    app,
    fail,
    opened_store,
    reporting,
)
from jobtable._dashboard.serve import check_bind, serve
from jobtable._errors import JobtableError, RunnerError
from jobtable._kind import Kind
from jobtable._runner.runner import Runner


def load_runner(spec: str) -> Runner:
    """Returns the Runner that spec (``package.module:attribute``) names.

    The attribute may be dotted, or a function of no arguments that returns
    a Runner. The current directory is importable first, as the application's
    own scripts would have it. Fails with one line for anything else, and for
    a jobtable error (a store that cannot be opened) while importing or
    calling it.
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        fail(f"worker {spec!r}: want module:attribute, such as app.tasks:runner")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: object = importlib.import_module(module_name)
    except ImportError as err:
        fail(f"worker {spec!r}: cannot import {module_name}: {err}")
    except JobtableError as err:  # the module's own Store.open, say: its message is safe
        fail(f"worker {spec!r}: importing {module_name}: {err}")
    for part in attribute.split("."):
        if not hasattr(value, part):
            fail(f"worker {spec!r}: {module_name} has no attribute {attribute}")
        value = getattr(value, part)
    if not isinstance(value, Runner) and callable(value) and not isinstance(value, type):
        try:
            inspect.signature(value).bind()
        except TypeError:
            fail(
                f"worker {spec!r}: {attribute} needs arguments; want a Runner or a function of none"
            )
        except ValueError:
            pass  # no signature to read (a builtin): call it as it is
        try:
            value = value()
        except JobtableError as err:
            fail(f"worker {spec!r}: {attribute}(): {err}")
        if not isinstance(value, Runner):
            fail(f"worker: {spec} returned {_described(value)}, want a jobtable.Runner")
    if not isinstance(value, Runner):
        fail(f"worker: {spec} is {_described(value)}, want a jobtable.Runner")
    return value


def _described(value: object) -> str:
    """value's type and a short repr (``int 7``), or a class by its name."""
    if isinstance(value, type):
        return f"the class {value.__qualname__}, not an instance"
    if isinstance(value, Kind):
        return f"the kind {value.name!r} (name the Runner its handler is attached to)"
    return f"{type(value).__name__} {reprlib.repr(value)}"


@app.command("worker")
def worker(
    spec: Annotated[
        str, typer.Argument(help="The runner: module:attribute, e.g. app.tasks:runner.")
    ],
    log_level: Annotated[
        str, typer.Option(help="The level of the log lines printed on stderr.")
    ] = "INFO",
    log_format: Annotated[
        str,
        typer.Option(help="text: a line per record; json: a JSON object per line."),
    ] = "text",
) -> None:
    """Runs the application's runner until SIGINT or SIGTERM (a second one cancels the handlers)."""
    level = logging.getLevelNamesMapping().get(log_level.upper())
    if level is None:
        fail(f"--log-level {log_level!r}: want DEBUG, INFO, WARNING or ERROR")
    formats: dict[str, logging.Formatter] = {
        "text": JobFields("%(asctime)s %(levelname)s %(name)s: %(message)s"),
        "json": JsonLines(),
    }
    if log_format not in formats:
        fail(f"--log-format {log_format!r}: want text or json")
    handler = logging.StreamHandler()
    handler.setFormatter(formats[log_format])
    logging.basicConfig(level=level, handlers=[handler])
    runner = load_runner(spec)
    try:
        runner.run()
    except RunnerError as err:  # refused to start (no handler, say): its message says why
        fail(f"worker {spec!r}: {err}")


class JobFields(logging.Formatter):
    """Prints a record about a job with its job_id, kind and attempt after the message."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        """The formatted message, then ``[job_id=... kind=... attempt=...]`` for a job's record."""
        text = super().formatMessage(record)
        fields = record.__dict__
        if "job_id" not in fields:
            return text
        return (
            f"{text} [job_id={fields['job_id']} kind={fields.get('kind')} "
            f"attempt={fields.get('attempt')}]"
        )


class JsonLines(logging.Formatter):
    """Formats a record as one JSON object on one line, for log shippers.

    Its keys: ``time`` (ISO 8601, UTC), ``level``, ``logger``, ``message``;
    ``job_id``, ``kind`` and ``attempt`` when the record is about a job; and
    ``exception``, the traceback, when the record carries one (the log is the
    one place a handler's exception text goes).
    """

    def format(self, record: logging.LogRecord) -> str:
        """The record as a JSON object without a newline inside it."""
        moment = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
        line: dict[str, object] = {
            "time": moment.isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = record.__dict__
        for key in ("job_id", "kind", "attempt"):
            if fields.get(key) is not None:
                line[key] = fields[key]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _basic(text: str | None) -> tuple[str, str] | None:
    if text is None:
        return None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        fail("--basic-auth: want user:password")
    return user, password


@app.command("dashboard")
def dashboard(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    host: Annotated[
        str, typer.Option(help="The address to listen on; another than loopback needs auth.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port to listen on (0: any free port).")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="JOBTABLE_DASHBOARD_TOKEN",
            show_envvar=True,
            help="Require this bearer token (or ?token= once, which sets a cookie).",
        ),
    ] = None,
    basic_auth: Annotated[
        str | None,
        typer.Option(
            "--basic-auth",
            envvar="JOBTABLE_DASHBOARD_BASIC_AUTH",
            show_envvar=True,
            help="Require HTTP basic auth as user:password.",
        ),
    ] = None,
    read_only: Annotated[
        bool, typer.Option("--read-only", help="Show no actions; refuse every POST.")
    ] = False,
    root_path: Annotated[
        str, typer.Option(help="The path prefix a reverse proxy serves the dashboard under.")
    ] = "",
) -> None:
    """Serves the web dashboard: counts, throughput, runners, jobs and their actions."""
    credentials = _basic(basic_auth)
    with reporting(None):
        check_bind(host, token=token or None, basic_auth=credentials)
    with opened_store(store, pooled, listen_url) as opened, reporting(store):
        try:
            serve(
                opened,
                host=host,
                port=port,
                token=token or None,
                basic_auth=credentials,
                read_only=read_only,
                root_path=root_path,
            )
        except ModuleNotFoundError as err:
            fail(f"the dashboard needs {err.name}: install jobtable[dashboard]")
