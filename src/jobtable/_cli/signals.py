"""``jobtable signal NAME KEY --payload JSON``: send a signal, resuming the jobs waiting for it.

The command declares the signal by its name with a JSON payload (the CLI
has no Python type for it) and calls ``Store.signal``, as user code does;
each waiting handler validates the payload against its own ``Signal``'s
type, and skips (and logs) one that does not fit.
"""

import json
from typing import Annotated

import pydantic
import typer

from jobtable._cli.app import (
    JsonOption,
    ListenUrlOption,
    PooledOption,
    StoreOption,
    app,
    emit,
    fail,
    opened_store,
)
from jobtable._signal import Signal


@app.command("signal")
def send_signal(
    name: Annotated[str, typer.Argument(help="The signal's name.", show_default=False)],
    key: Annotated[str, typer.Argument(help="The key the jobs wait on.", show_default=False)],
    payload: Annotated[
        str, typer.Option(help="The payload, as JSON (such as '{\"approved\": true}').")
    ] = "{}",
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sends a signal: every job waiting for NAME under KEY resumes with the payload.

    A job that begins to wait for it later receives it too, while it is kept
    (a week). Prints how many waiting jobs it resumed.
    """
    try:
        value = json.loads(payload)
    except json.JSONDecodeError as err:
        fail(f"--payload is not JSON: {err}; give the payload as JSON text")
    with opened_store(store, pooled, listen_url) as opened:
        try:
            declared = Signal[pydantic.JsonValue](name, pydantic.JsonValue)  # type: ignore[arg-type]
        except (TypeError, ValueError) as err:
            fail(str(err))
        resumed = opened.signal(declared, key, value)
    emit(
        {"signal": name, "key": key, "resumed": resumed},
        as_json,
        lambda: f"sent signal {name!r} under key {key!r}: resumed {resumed} waiting job(s)",
    )
