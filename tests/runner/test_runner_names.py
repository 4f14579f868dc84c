"""The default runner name is unique per process, so forked web workers never share one."""

import os
import socket
import subprocess
import sys

import pytest

import jobtable

PRINT_NAME = """
import sys, jobtable
with jobtable.Store.open(sys.argv[1]) as store:
    print(jobtable.Runner(store).name)
"""


def test_the_default_name_is_the_host_and_the_process_id(store: jobtable.Store) -> None:
    assert jobtable.Runner(store).name == f"{socket.gethostname()}-{os.getpid()}"


@pytest.mark.slow
def test_two_processes_get_different_default_names(store_target: str) -> None:
    names = {
        subprocess.run(
            [sys.executable, "-c", PRINT_NAME, store_target],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(names) == 2


def test_an_explicit_name_is_kept_as_given(store: jobtable.Store) -> None:
    assert jobtable.Runner(store, name="web-slot-1").name == "web-slot-1"
