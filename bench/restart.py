"""How long PostgreSQL writes take to recover after a server restart.

Starts a throwaway cluster (initdb into a temporary folder as the postgres
user, a free port), lets 1, 4 or 16 writer threads enqueue through one Store
for a second, restarts the server (``pg_ctl restart -m fast``), and measures
the time from "server ready" (pg_ctl returned) to the first enqueue, and the
first claim after it, that succeed. The shared server is never touched.

    .venv/bin/python -m bench.restart            # 1, 4 and 16 writers, 3 rounds each
    .venv/bin/python -m bench.restart 4 --rounds 5
    .venv/bin/python -m bench.restart 1 --down 3 10   # also: server stopped 3 s, 10 s
"""

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import jobtable
from jobtable._runner.run_operations import FinishAndClaim


def _bin(tool: str) -> str:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"))
    if not found:
        raise SystemExit(f"no {tool} under /usr/lib/postgresql/*/bin")
    return str(found[-1])


def _as_postgres(*args: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *args], check=True, capture_output=True)


@contextlib.contextmanager
def cluster() -> Iterator[tuple[str, Path]]:
    """A running throwaway cluster: yields its URL and data folder; removes it after."""
    root = Path(tempfile.mkdtemp(prefix="jobtable-bench-pg-"))
    shutil.chown(root, "postgres")
    data = root / "data"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    _as_postgres(_bin("initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync")
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    ctl = [_bin("pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w"]
    _as_postgres(*ctl, "start")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres", data
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            _as_postgres(*ctl, "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


def _ctl(data: Path, *args: str, port: int | None = None) -> None:
    """Runs pg_ctl with args on the cluster in data, on port (read from postmaster.pid if None)."""
    root = data.parent
    port = _port_of(data) if port is None else port
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    _as_postgres(
        _bin("pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-o", options, "-w", *args
    )  # fmt: skip


def _restart(data: Path) -> None:
    _ctl(data, "-m", "fast", "restart")


def _port_of(data: Path) -> int:
    # postmaster.pid's fourth line is the port.
    return int((data / "postmaster.pid").read_text().splitlines()[3])


async def _noop(ctx: jobtable.JobContext[None], payload: int) -> None:
    return None


def _until_it_lands(write: Callable[[], object]) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            write()
            return
        except jobtable.StoreError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def one_round(url: str, data: Path, writers: int) -> tuple[float, float]:
    """Seconds from server ready to the first enqueue, and then the first claim, after a restart.

    The writers enqueue at once for a second, so the pool holds a connection
    for each (up to its size); then they rest while the server restarts, as
    an application between bursts does. At "server ready" one request
    enqueues, then claims, each retried until it lands.
    """
    with jobtable.Store.open(url) as store:
        kind = jobtable.Runner(store, name="bench-restart").register("noop", _noop)
        stop = threading.Event()

        def write() -> None:
            while not stop.is_set():
                kind.enqueue(0)

        threads = [threading.Thread(target=write) for _ in range(writers)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        stop.set()
        for thread in threads:
            thread.join()
        _restart(data)
        ready_at = time.monotonic()
        _until_it_lands(lambda: kind.enqueue(0))
        enqueued_at = time.monotonic()
        _until_it_lands(
            lambda: store.engine.write(
                FinishAndClaim([], "bench-restart", "default", 1, store.now())
            )
        )
        return enqueued_at - ready_at, time.monotonic() - ready_at


def down_round(url: str, data: Path, down: float) -> float:
    """Seconds from server ready to the first enqueue after the server was down for down seconds.

    One writer keeps trying to enqueue (every 10 ms, as in one_round) from
    the moment the server stops, so its connection attempts fail throughout.
    """
    with jobtable.Store.open(url) as store:
        kind = jobtable.Runner(store, name="bench-restart").register("noop", _noop)
        kind.enqueue(0)
        port = _port_of(data)
        _ctl(data, "-m", "fast", "stop")
        landed: list[float] = []

        def write() -> None:
            _until_it_lands(lambda: kind.enqueue(0))
            landed.append(time.monotonic())

        thread = threading.Thread(target=write)
        thread.start()
        time.sleep(down)
        _ctl(data, "start", port=port)
        ready_at = time.monotonic()
        thread.join()
        return landed[0] - ready_at


def main() -> None:
    """Prints the restart-to-first-write times for each number of writers."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("writers", nargs="*", type=int, default=[1, 4, 16])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--down",
        type=float,
        nargs="*",
        default=[],
        help="also stop the server for each of these seconds while a writer keeps trying",
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the cluster runs as the postgres user (runuser)")
    with cluster() as (url, data):
        print("writers  first enqueue after ready (s)      then first claim after ready (s)")
        for writers in args.writers:
            rounds = [one_round(url, data, writers) for _ in range(args.rounds)]
            enq = " ".join(f"{e:6.2f}" for e, _ in rounds)
            cla = " ".join(f"{c:6.2f}" for _, c in rounds)
            print(f"{writers:7d}  {enq:34s} {cla}", flush=True)
        for down in args.down:
            after = " ".join(f"{down_round(url, data, down):6.2f}" for _ in range(args.rounds))
            print(f"down {down:g} s, one writer trying throughout: first enqueue {after}")


if __name__ == "__main__":
    main()
