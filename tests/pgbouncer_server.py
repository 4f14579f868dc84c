"""A throwaway PgBouncer in transaction mode, in front of the test server.

The tests get a PgBouncer of their own, configured in a temporary folder,
listening on 127.0.0.1 at a free port, in ``pool_mode = transaction``, with
no authentication (every client logs in to the server as the server URL's
user). Each test schema is a database alias of its own (``add_schema``), served
in transaction mode by one server connection, which every client of the
alias shares, or in session mode:
its ``connect_query`` sets the search_path on every server connection the
pooler opens for it, as ``ALTER ROLE … SET search_path`` would in a
deployment, since PgBouncer passes no ``options`` startup parameter. As root
PgBouncer runs as the ``postgres`` user, which then owns the folder.
"""

import contextlib
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from psycopg import conninfo

SERVER_USER = "postgres"
"""The user PgBouncer runs as when the tests run as root (it refuses root)."""

SESSIONS = 40
"""Server connections of an alias in session mode: one per client connection of a test."""

RESET = (
    "CLOSE ALL; DEALLOCATE ALL; UNLISTEN *; SELECT pg_advisory_unlock_all(); "
    "DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES"
)
"""What session mode runs on a server connection a client gave back: DISCARD ALL but RESET ALL.

RESET ALL would undo the alias's search_path, which ``ALTER ROLE … SET``
would keep in a deployment.
"""

PREPARED = 8
"""How many statements ``Bouncer.prepare_as_another_client`` leaves prepared."""

START_LIMIT = 30
"""Seconds to wait for PgBouncer to accept connections, or for a reload to take."""


def _binary() -> str | None:
    return shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")


def cannot_run() -> str | None:
    """Why no throwaway PgBouncer can run here, or None when one can."""
    if _binary() is None:
        return "no pgbouncer binary on PATH or in /usr/sbin (apt-get install pgbouncer)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root, and there is no {SERVER_USER} user to run PgBouncer as"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Bouncer:
    """One throwaway PgBouncer: its folder, port, and the server it pools."""

    folder: pathlib.Path
    port: int
    server_url: str
    aliases: dict[str, tuple[str, str]] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    """The user an alias logs in to the server as, where not the server URL's."""
    process: "subprocess.Popen[bytes] | None" = None

    @property
    def log(self) -> pathlib.Path:
        """PgBouncer's log file."""
        return self.folder / "pgbouncer.log"

    def server_log(self) -> str:
        """Everything PgBouncer logged so far."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    def url(self, alias: str) -> str:
        """The URL of alias through PgBouncer."""
        return f"postgresql://{self._server()['user']}@127.0.0.1:{self.port}/{alias}"

    def _server(self) -> dict[str, str]:
        params = conninfo.conninfo_to_dict(self.server_url)
        return {
            "host": str(params.get("host", "127.0.0.1")),
            "port": str(params.get("port", "5432")),
            "dbname": str(params.get("dbname", "test")),
            "user": str(params.get("user", "postgres")),
        }

    def _write_config(self) -> None:
        server = self._server()
        target = " ".join(f"{key}={value}" for key, value in server.items())
        databases = [f"{server['dbname']} = {target}"]
        for alias, (schema, mode) in self.aliases.items():
            # In session mode each client holds a server connection while it is connected.
            size = 1 if mode == "transaction" else SESSIONS
            user = self.users.get(alias, server["user"])
            as_user = " ".join(f"{k}={user if k == 'user' else v}" for k, v in server.items())
            databases.append(
                f"{alias} = {as_user} pool_size={size} pool_mode={mode}"
                f" connect_query='SET search_path TO {schema}'"
            )
        (self.folder / "pgbouncer.ini").write_text(
            "[databases]\n"
            + "\n".join(databases)
            + "\n\n[pgbouncer]\n"
            + f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            + f"logfile = {self.log}\npidfile = {self.folder / 'pgbouncer.pid'}\n"
            + "auth_type = any\npool_mode = transaction\n"
            + "max_client_conn = 500\ndefault_pool_size = 4\n"
            + "ignore_startup_parameters = extra_float_digits\n"
            + f"server_reset_query = {RESET}\n"
        )

    def start(self) -> None:
        """Starts PgBouncer and waits until it accepts connections; raises RuntimeError if not."""
        self._write_config()
        argv = [str(_binary()), "-q", str(self.folder / "pgbouncer.ini")]
        if os.geteuid() == 0:
            argv[1:1] = ["-u", SERVER_USER]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        self._wait_for(self._server()["dbname"])

    def add_schema(
        self, alias: str, schema: str, mode: str = "transaction", user: str | None = None
    ) -> str:
        """Adds alias, whose connections use schema, reloads, and returns alias's URL.

        mode is the alias's pool_mode: transaction or session. user, when
        given, is the role the alias logs in to the server as.
        """
        self.aliases[alias] = (schema, mode)
        if user is not None:
            self.users[alias] = user
        self._write_config()
        assert self.process is not None
        self.process.send_signal(signal.SIGHUP)
        self._wait_for(alias)
        return self.url(alias)

    def prepare_as_another_client(self, alias: str) -> None:
        """Leaves statements prepared, as psycopg names them, on alias's one server connection.

        As another application sharing the pooler would: a client that then
        prepares a statement of its own on that connection is refused
        (prepared statement "_pg3_0" already exists).
        """
        import psycopg

        with psycopg.connect(self.url(alias), autocommit=True) as conn:
            for number in range(PREPARED):
                for _ in range(conn.prepare_threshold or 0):
                    conn.execute(f"SELECT {number}::int + %s", (number,))
                conn.execute(f"SELECT {number}::int + %s", (number,))

    def remove_schema(self, alias: str) -> None:
        """Forgets alias at the next reload (its pool stays until then)."""
        self.aliases.pop(alias, None)
        self.users.pop(alias, None)

    def _wait_for(self, alias: str) -> None:
        import psycopg

        deadline = time.monotonic() + START_LIMIT
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                break
            try:
                with psycopg.connect(self.url(alias), connect_timeout=2, prepare_threshold=None):
                    return
            except psycopg.Error as err:
                last = err
            time.sleep(0.1)
        raise RuntimeError(
            f"PgBouncer did not serve {alias} within {START_LIMIT} s ({last}); "
            f"its log:\n{self.server_log()}"
        )

    def stop(self) -> None:
        """Stops PgBouncer (SIGINT: at once, closing every connection) and waits for it."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(START_LIMIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def throwaway_bouncer(server_url: str) -> Iterator[Bouncer]:
    """A started PgBouncer pooling server_url's database; stopped and removed on exit."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="jobtable-pgbouncer-"))
    try:
        if os.geteuid() == 0:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(folder, entry.pw_uid, entry.pw_gid)
        bouncer = Bouncer(folder, _free_port(), server_url)
        try:
            bouncer.start()
            yield bouncer
        finally:
            bouncer.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class PooledURLs:
    """A test schema's two URLs: through PgBouncer (pooled), and direct (to listen)."""

    pooled: str
    direct: str
