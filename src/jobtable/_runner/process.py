"""Whether a runner's process is gone: the evidence the kernel of one machine gives.

A runner records where it runs and which process it is (``ProcessId``). A
runner on the same host, or a process that restarted there under another
name, can then tell exactly whether that process still exists: a process
that is gone runs no handler, so its jobs may be interrupted at once,
without waiting for its lease. A process that exists, even stopped
(SIGSTOP) or cut off from the store, is never judged gone here; the lease
alone decides for it, as it does for every runner of another host.

The host is the kernel's boot id with the pid namespace, so two containers
of one machine (whose pids do not see each other) are two hosts, as are two
boots. The process is its pid with the time it started (clock ticks since
boot), so a pid the kernel reused for another process does not pass for the
old one. Both are opaque text to the store, which only compares them. Linux
only: where /proc does not give them, a runner records none and is judged
by its lease alone.
"""

import functools
import os
from typing import NamedTuple

_PROC = "/proc"


class ProcessId(NamedTuple):
    """Where a runner runs (host) and which process it is there (process)."""

    host: str
    process: str


def _stat(pid: int | str) -> tuple[str, str] | None:
    """The state letter and start time of process pid, or None when /proc does not show it."""
    try:
        with open(f"{_PROC}/{pid}/stat", encoding="ascii", errors="replace") as file:
            text = file.read()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces and parentheses: the
    # fields that follow start after the last ")". State is field 3, start time 22.
    fields = text.rpartition(")")[2].split()
    if len(fields) < 20:
        return None
    return fields[0], fields[19]


@functools.cache
def this_host() -> str | None:
    """This machine's boot and pid namespace as text, or None when /proc cannot tell.

    /proc must be this process's own (its ``self`` is this pid), or pids read
    there would be another namespace's.
    """
    try:
        with open(f"{_PROC}/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip()
        namespace = os.readlink(f"{_PROC}/self/ns/pid")
        own = os.readlink(f"{_PROC}/self")
    except OSError:
        return None
    if not boot or own != str(os.getpid()):
        return None
    return f"{boot} {namespace}"


def this_process() -> ProcessId | None:
    """The calling process's ProcessId, or None where the machine cannot give one.

    Taken anew at each call: a forked child is another process.
    """
    host = this_host()
    pid = os.getpid()
    stat = _stat(pid)
    if host is None or stat is None:
        return None
    return ProcessId(host, f"{pid} {stat[1]}")


def gone(host: str | None, process: str | None) -> bool:
    """True only when process ran on this host and no longer runs; never for one that may.

    A process that exited (a zombie its parent has not reaped included) or
    whose pid now belongs to a process started at another time is gone.
    Another host's process, one /proc does not show (another user's under
    ``hidepid``), and text this module did not write are not known to be
    gone: False.
    """
    if host is None or process is None or host != this_host():
        return False
    pid_text, _, started = process.partition(" ")
    if not pid_text.isdigit() or not started.isdigit() or int(pid_text) <= 0:
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, and belongs to another user
    except OSError:
        return False
    stat = _stat(pid)
    if stat is None:
        return False
    state, start = stat
    return start != started or state in ("Z", "X", "x")
