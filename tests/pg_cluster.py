"""A throwaway PostgreSQL cluster for the tests that stop or restart a server.

The shared test server is never stopped: other suites use it at the same
time. A test that needs an outage takes the ``throwaway_pg`` fixture (in
conftest.py) instead: a cluster made by ``initdb`` in a temporary folder of
its own, listening on 127.0.0.1 at a free port and on a socket in that folder,
stopped and removed after the test. initdb refuses to run as root, so as
root every server command runs as the ``postgres`` user, which owns the
folder.
"""

import contextlib
import os
import pathlib
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

SERVER_USER = "postgres"
"""The user the server runs as when the tests run as root."""

START_LIMIT = 60
"""Seconds pg_ctl waits for the server to start or stop before it gives up."""


def find_bindir() -> pathlib.Path | None:
    """The newest PostgreSQL bin folder under /usr/lib/postgresql with initdb and pg_ctl."""
    found = [
        path
        for path in pathlib.Path("/usr/lib/postgresql").glob("*/bin")
        if (path / "initdb").exists() and (path / "pg_ctl").exists()
    ]

    def version(path: pathlib.Path) -> tuple[int, ...]:
        name = path.parent.name
        return tuple(int(part) for part in name.split(".") if part.isdigit())

    return max(found, key=version) if found else None


def cannot_run() -> str | None:
    """Why no throwaway cluster can run here, or None when one can."""
    if find_bindir() is None:
        return "no PostgreSQL binaries in /usr/lib/postgresql/*/bin"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root, and there is no {SERVER_USER} user to run initdb as"
        if shutil.which("runuser") is None:
            return "running as root, and runuser is not installed"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Cluster:
    """One throwaway cluster: its folder, port and URL (trust auth, user postgres)."""

    bindir: pathlib.Path
    folder: pathlib.Path
    port: int
    max_connections: int = 50
    address: str = "127.0.0.1"
    """The address it listens on (any of 127.0.0.0/8 is this machine); start reads it."""

    @property
    def datadir(self) -> pathlib.Path:
        """The cluster's data folder."""
        return self.folder / "data"

    @property
    def log(self) -> pathlib.Path:
        """The server's log file, kept across restarts."""
        return self.folder / "server.log"

    @property
    def url(self) -> str:
        """The URL of the cluster's postgres database."""
        return f"postgresql://postgres@{self.address}:{self.port}/postgres"

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        """Runs a server program of bindir (as the server user when root); fails on error."""
        argv = [str(self.bindir / command[0]), *command[1:]]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", SERVER_USER, "--", *argv]
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=START_LIMIT + 30,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n"
                f"server log:\n{self.server_log()}"
            )
        return done

    def server_log(self) -> str:
        """Everything the server logged so far, or "" before it started."""
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")
        return ""

    def start(self) -> None:
        """Starts the server and waits until it accepts connections."""
        options = (
            f"-p {self.port} -k {self.folder} -c listen_addresses={self.address} -c fsync=off"
            f" -c max_connections={self.max_connections}"
        )
        self.run(
            "pg_ctl", "start", "-D", str(self.datadir), "-l", str(self.log), "-w",
            "-t", str(START_LIMIT), "-o", options,
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stops the server (mode fast, smart or immediate) and waits until it is down."""
        datadir = str(self.datadir)
        self.run("pg_ctl", "stop", "-D", datadir, "-m", mode, "-w", "-t", str(START_LIMIT))

    def restart(self, mode: str = "fast") -> None:
        """Stops the server (mode as for stop) and starts it again with the same options."""
        # -l again: without it the new server would write to pg_ctl's pipes,
        # which then never close.
        self.run(
            "pg_ctl", "restart", "-D", str(self.datadir), "-l", str(self.log), "-m", mode,
            "-w", "-t", str(START_LIMIT),
        )  # fmt: skip

    def running(self) -> bool:
        """Whether the server's postmaster is up."""
        argv = [str(self.bindir / "pg_ctl"), "status", "-D", str(self.datadir)]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", SERVER_USER, "--", *argv]
        return subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode == 0


@contextlib.contextmanager
def throwaway_cluster(max_connections: int = 50) -> Iterator[Cluster]:
    """A new, started cluster; stopped (immediately) and removed, folder and all, on exit.

    Raises RuntimeError, with the server's log, when it cannot be made or started.
    """
    bindir = find_bindir()
    if bindir is None:
        raise RuntimeError("no PostgreSQL binaries in /usr/lib/postgresql/*/bin")
    # Not pytest's tmp_path: its parents are private to root, and the server
    # user must reach the folder.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="jobtable-pg-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, user=SERVER_USER, group=None)
        cluster = Cluster(bindir, folder, free_port(), max_connections)
        cluster.run(
            "initdb", "-D", str(cluster.datadir), "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions",
        )  # fmt: skip
        for attempt in range(3):
            try:
                cluster.start()
                break
            except RuntimeError:
                # Another process may have taken the port in the meantime.
                if attempt == 2 or cluster.running():
                    raise
                cluster.port = free_port()
        try:
            yield cluster
        finally:
            if cluster.running():
                cluster.stop("immediate")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
