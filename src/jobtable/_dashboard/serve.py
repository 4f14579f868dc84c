"""The standalone dashboard: ``jobtable dashboard`` serves it with uvicorn.

It binds the loopback address unless told otherwise, and will not listen on
any other address without a token or basic auth: a job table's payloads and
actions are not for whoever can reach the port.
"""

import copy
import ipaddress
import logging
import re
import socket

from jobtable._dashboard import dashboard
from jobtable._store import Store

LOOPBACK_NAMES = frozenset({"localhost"})


def is_loopback(host: str) -> bool:
    """Whether host (a name or an address) is this machine's loopback only."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, token: str | None, basic_auth: tuple[str, str] | None) -> None:
    """Raises ValueError, naming host, when host is not loopback and no authentication is set."""
    if not host:
        raise ValueError("dashboard: the host to bind is empty")
    if not is_loopback(host) and token is None and basic_auth is None:
        raise ValueError(
            f"dashboard: refusing to bind {host!r} without authentication: "
            "give a token or basic auth, or bind 127.0.0.1"
        )


def check_listen(host: str, port: int) -> None:
    """Raises OSError, naming host and port, when nothing could listen there now.

    uvicorn would log the failure among its start-up lines and exit with
    status 3; this says it first, in one line. (Another process may still
    take the port before uvicorn binds it: uvicorn then reports that itself.)
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            raise OSError(
                f"dashboard: cannot listen on {host}:{port}: {err.strerror or err}"
            ) from None


_TOKEN_IN_QUERY = re.compile(r"([?&]token=)[^&#\s]*")


class _RedactTokens(logging.Filter):
    """Hides the value of ``?token=`` in uvicorn's access log lines: it is a credential."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                _TOKEN_IN_QUERY.sub(r"\1***", arg) if isinstance(arg, str) else arg
                for arg in record.args
            )
        return True


def serve(
    store: Store,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    basic_auth: tuple[str, str] | None = None,
    read_only: bool = False,
    root_path: str = "",
) -> None:
    """Serves the dashboard of store with uvicorn until interrupted (Ctrl-C, SIGTERM).

    Raises ValueError before listening when host is not loopback and neither
    token nor basic_auth is given, or for a port outside 0 to 65535 (0: any
    free port, which uvicorn's log names), and OSError when the address
    cannot be listened on (a port in use, an address not this machine's).
    root_path is the path prefix a reverse proxy serves it under.
    """
    check_bind(host, token=token, basic_auth=basic_auth)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"dashboard: port must be 0 to 65535, got {port!r}")
    check_listen(host.strip("[]"), port)
    import uvicorn

    app = dashboard(store, read_only=read_only, token=token, basic_auth=basic_auth)
    # uvicorn's own logging, with a ?token= sign-in kept out of its access log.
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config.setdefault("filters", {})["redact_tokens"] = {"()": _RedactTokens}
    log_config["handlers"]["access"]["filters"] = ["redact_tokens"]
    uvicorn.run(
        app,
        host=host.strip("[]"),
        port=port,
        root_path=root_path,
        log_level="info",
        log_config=log_config,
        proxy_headers=False,
        server_header=False,
        # Open pages hold live streams (each ends within live.LIFETIME): a stop waits 2 s at most.
        timeout_graceful_shutdown=2,
    )
