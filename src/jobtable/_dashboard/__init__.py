"""The web dashboard's entry point: ``jobtable.dashboard(store)`` returns an ASGI app.

Starlette and Jinja2 are the optional ``jobtable[dashboard]`` extra, so they
are imported only when a dashboard is built: importing jobtable never needs
them.
"""

from typing import TYPE_CHECKING

from jobtable._store import Store

if TYPE_CHECKING:
    from starlette.types import ASGIApp


def dashboard(
    store: Store,
    *,
    read_only: bool = False,
    token: str | None = None,
    basic_auth: tuple[str, str] | None = None,
    secret: str | bytes | None = None,
    refresh: float = 2.0,
    lease: float = 30.0,
) -> "ASGIApp":
    """Returns the dashboard of store as an ASGI app, to mount or to serve.

    Mount it in a Starlette or FastAPI app, ``app.mount("/jobs",
    jobtable.dashboard(store))``, and the host app's authentication applies;
    every link stays under the mount path. Its pages: the overview (counts per
    queue and status, the last hour's throughput, the runners), the job list
    (filters and keyset pages), the queues (pauses, limits, counts), and each
    job's page (with why a queued job waits). It never shows a handler's
    exception text: errors are the stored messages only, and every stored
    value is escaped.

    Every state-changing request (cancel, retry, delete, bulk actions, a
    queue's pause, resume and limits) is a POST that must carry the CSRF token
    the pages embed; a POST without it is refused with 403.

    Args:
        store: The store to show.
        read_only: The pages show no actions and every POST is refused with 403.
        token: Every request must authenticate with ``Authorization: Bearer
            <token>`` (or ``?token=<token>`` once, which sets a cookie).
        basic_auth: A user and a password every request must give by HTTP basic
            auth. The standalone ``jobtable dashboard`` sets token or basic_auth.
        secret: Signs the CSRF tokens; give the same one to every process that
            serves one dashboard (None: a random one).
        refresh: Seconds between the overview's refreshes.
        lease: The runner lease (seconds) after which the overview shows a
            runner as dead.

    Returns:
        The ASGI app.

    Raises:
        ModuleNotFoundError: Starlette or Jinja2 is missing (naming the extra,
            ``jobtable[dashboard]``).
        TypeError: store is not a Store, or another argument of the wrong type.
        ValueError: An empty token, a bad basic_auth (a ``:`` in the user, an
            empty part), or a refresh that is not a positive number of seconds.
    """
    if not isinstance(store, Store):
        raise TypeError(f"dashboard: store is {type(store).__name__}, want a jobtable.Store")
    if token is not None and (not isinstance(token, str) or not token):
        raise ValueError("dashboard: token must be a non-empty str")
    if basic_auth is not None and (
        not isinstance(basic_auth, tuple)
        or len(basic_auth) != 2
        or not all(isinstance(part, str) and part for part in basic_auth)
        or ":" in basic_auth[0]
    ):
        raise ValueError(
            "dashboard: basic_auth must be (user, password), non-empty, no ':' in user"
        )
    if isinstance(refresh, bool) or not isinstance(refresh, int | float) or not refresh > 0:
        raise ValueError(
            f"dashboard: refresh must be a positive number of seconds, got {refresh!r}"
        )
    try:
        from jobtable._dashboard.app import build_app
    except ModuleNotFoundError as err:
        if err.name is not None and err.name.split(".")[0] in {"starlette", "jinja2"}:
            raise ModuleNotFoundError(
                f"jobtable.dashboard needs {err.name.split('.')[0]}: install jobtable[dashboard]",
                name=err.name,
            ) from err
        raise
    return build_app(
        store,
        read_only=bool(read_only),
        token=token,
        basic_auth=basic_auth,
        secret=secret,
        refresh=float(refresh),
        lease=lease,
    )
