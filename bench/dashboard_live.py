"""The dashboard's live overview at 50 open pages: polling against server-sent events.

``jobtable dashboard`` runs in a process of its own on a fresh SQLite file
(or a PostgreSQL schema); 50 clients watch the overview's live part for
--seconds, first each polling ``/live/overview`` every 2 s as the page's
fallback does, then each holding ``/live/overview/events`` open (streams
end every 10 s and are opened again, as a browser does). Meanwhile a job is
enqueued every 0.2 s, so the counts change on every tick. The figures are
the server process's CPU seconds (from /proc) and the requests it answered.

    .venv/bin/python -m bench.dashboard_live
    .venv/bin/python -m bench.dashboard_live --clients 100 --seconds 60
"""

import argparse
import http.client
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

import jobtable

NOTE = jobtable.Kind("note", str, str)
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """The user and system CPU seconds process pid has used."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ready(port: int) -> None:
    """Returns once the server on port accepts connections (60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def poll(port: int, stop: threading.Event, answered: list[int]) -> None:
    """GETs the overview's live part every 2 s until stop."""
    while not stop.is_set():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/live/overview")
        conn.getresponse().read()
        conn.close()
        answered.append(1)
        stop.wait(2.0)


def stream(port: int, stop: threading.Event, answered: list[int]) -> None:
    """Holds the overview's event stream open, opening it again when it ends, until stop."""
    while not stop.is_set():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/live/overview/events")
        response = conn.getresponse()
        answered.append(1)
        while not stop.is_set() and response.readline():
            pass
        conn.close()


def measure(
    port: int, pid: int, client: Callable[..., None], clients: int, seconds: float
) -> tuple[float, int]:
    """Server CPU seconds and requests for clients running client for seconds."""
    stop, answered = threading.Event(), list[int]()
    threads = [
        threading.Thread(target=client, args=(port, stop, answered), daemon=True)
        for _ in range(clients)
    ]
    began = cpu_seconds(pid)
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    used = cpu_seconds(pid) - began
    stop.set()
    return used, len(answered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = f"{folder}/live.db"
        store = jobtable.Store.open(path)
        port = free_port()
        script = pathlib.Path(sys.executable).with_name("jobtable")
        server = subprocess.Popen(
            [str(script), "dashboard", "--store", path, "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stop = threading.Event()
        feeder = threading.Thread(
            target=lambda: [NOTE.enqueue(store, "x") for _ in iter(lambda: stop.wait(0.2), True)],
            daemon=True,
        )
        try:
            ready(port)
            feeder.start()
            print(f"{args.clients} clients, {args.seconds:g} s, SQLite, a job enqueued every 0.2 s")
            print("| clients watch by | requests | server CPU |\n|---|---:|---:|")
            for name, client in (("polling every 2 s", poll), ("server-sent events", stream)):
                used, answered = measure(port, server.pid, client, args.clients, args.seconds)
                print(f"| {name} | {answered} | {used:.2f} s |")
                time.sleep(1.0)
        finally:
            stop.set()
            server.terminate()
            server.wait(30)
            store.close()


if __name__ == "__main__":
    main()
