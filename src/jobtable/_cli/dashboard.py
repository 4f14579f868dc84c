"""``jobtable dashboard``: serve the web dashboard of a store with uvicorn.

It binds 127.0.0.1 unless told otherwise, and refuses any other address
without a token or basic auth. Both may come from the environment
(JOBTABLE_DASHBOARD_TOKEN, JOBTABLE_DASHBOARD_BASIC_AUTH), which keeps them
out of the process list.
"""

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
