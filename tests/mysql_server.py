"""A throwaway MariaDB server for the tests of the plugin's MySQL output.

The machine's own MariaDB instance, if any, is never used: the tests get a
server made by ``mariadb-install-db`` in a temporary folder of their own,
listening on 127.0.0.1 at a free port and on a socket in that folder, with
no grant tables (every connection is all-powerful, user root, no password),
stopped and removed after. As root the server runs as the ``mysql`` user,
which then owns the folder.
"""

import contextlib
import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

SERVER_USER = "mysql"
"""The user the server runs as when the tests run as root."""

START_LIMIT = 60
"""Seconds to wait for the server to accept connections before giving up."""


def _binary(*names: str) -> str | None:
    """The path of the first of names on PATH or in /usr/sbin, or None."""
    for name in names:
        found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/local/sbin")
        if found:
            return found
    return None


def cannot_run() -> str | None:
    """Why no throwaway server can run here, or None when one can."""
    if _binary("mariadbd", "mysqld") is None:
        return "no MariaDB server binary (mariadbd or mysqld) on PATH or in /usr/sbin"
    if _binary("mariadb-install-db", "mysql_install_db") is None:
        return "no mariadb-install-db on PATH"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root, and there is no {SERVER_USER} user to run the server as"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Server:
    """One throwaway server: its folder and port (user root, no password)."""

    folder: pathlib.Path
    port: int
    process: "subprocess.Popen[bytes] | None" = None

    @property
    def log(self) -> pathlib.Path:
        """The server's error log."""
        return self.folder / "server.log"

    @property
    def socket(self) -> pathlib.Path:
        """The server's Unix socket."""
        return self.folder / "mysqld.sock"

    def server_log(self) -> str:
        """Everything the server logged so far, or "" before it started."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    def accepts(self) -> bool:
        """Whether the server answers on its port with a handshake."""
        with (
            contextlib.suppress(OSError),
            socket.create_connection(("127.0.0.1", self.port), 1) as s,
        ):
            s.settimeout(1)
            return bool(s.recv(1))
        return False

    def start(self) -> None:
        """Starts the server and waits until it accepts connections; raises RuntimeError if not."""
        argv = [
            str(_binary("mariadbd", "mysqld")),
            "--no-defaults",
            f"--datadir={self.folder / 'data'}",
            f"--socket={self.socket}",
            f"--pid-file={self.folder / 'mysqld.pid'}",
            f"--log-error={self.log}",
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            "--skip-grant-tables",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-buffer-pool-size=16M",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_bin",
        ]
        if os.geteuid() == 0:
            argv.append(f"--user={SERVER_USER}")
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_LIMIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if self.accepts():
                return
            time.sleep(0.2)
        raise RuntimeError(f"MariaDB did not start:\n{self.server_log()}")

    def stop(self) -> None:
        """Kills the server and waits for it to exit."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=START_LIMIT)


@contextlib.contextmanager
def throwaway_server() -> Iterator[Server]:
    """A new, started server; killed and removed, folder and all, on exit.

    Raises RuntimeError, with the server's log, when it cannot be made or started.
    """
    # Not pytest's tmp_path: its parents are private to root, and the server
    # user must reach the folder.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="jobtable-mysql-"))
    try:
        argv = [
            str(_binary("mariadb-install-db", "mysql_install_db")),
            "--no-defaults",
            f"--datadir={folder / 'data'}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ]
        if os.geteuid() == 0:
            shutil.chown(folder, user=SERVER_USER, group=None)
            argv.append(f"--user={SERVER_USER}")
        done = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed:\n{done.stdout}{done.stderr}")
        server = Server(folder, _free_port())
        try:
            server.start()
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
