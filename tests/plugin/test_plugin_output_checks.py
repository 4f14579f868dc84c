"""The golden output meets the project's bar: mypy --strict, ruff, and no Any.

These run the tools as subprocesses on the checked-in goldens (which the
golden tests prove equal to a fresh generation), each golden package placed
under golden/ so that its relative imports resolve.
"""

import os
import pathlib
import re
import subprocess

import pytest
from plugin_harness import CASE_NAMES, GOLDEN, HERE, ROOT, tool


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # The overrides of the golden cases name types of tests/plugin/feature_types.py.
    env = {**os.environ, "MYPYPATH": str(HERE)}
    return subprocess.run(
        list(args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def _python_files(case: str) -> list[str]:
    return [str(p) for p in sorted((GOLDEN / case).glob("*.py"))]


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    # A cache of our own, shared by the cases, keeps these runs off the
    # project's cache and makes every run after the first warm.
    return tmp_path_factory.mktemp("mypy_cache")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_package_passes_mypy_strict(case: str, mypy_cache: pathlib.Path) -> None:
    done = _run(
        tool("mypy"),
        "--strict",
        "--disallow-any-explicit",
        "--cache-dir",
        str(mypy_cache),
        str(GOLDEN / case),
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_package_passes_ruff_check(case: str) -> None:
    # Generated SQL constants run past the line length; the project ignores
    # E501 for its generated package likewise.
    done = _run(
        tool("ruff"),
        "check",
        "--no-force-exclude",
        "--no-cache",
        "--ignore",
        "E501",
        *_python_files(case),
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_package_is_ruff_formatted(case: str) -> None:
    done = _run(
        tool("ruff"), "format", "--check", "--no-force-exclude", "--no-cache", *_python_files(case)
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_package_is_ruff_formatted_at_the_default_line_length(case: str) -> None:
    # Projects that use the plugin may keep ruff's default of 88, not our 100.
    done = _run(tool("ruff"), "format", "--check", "--isolated", "--no-cache", *_python_files(case))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_package_never_mentions_any(case: str) -> None:
    offending = [
        f"{path.name}:{number}: {line}"
        for path in sorted((GOLDEN / case).glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bAny\b", line)
    ]
    assert not offending, "\n".join(offending)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASE_NAMES)
def test_golden_package_passes_ruff_as_a_user_runs_it(case: str) -> None:
    # No configuration of ours (--isolated): ruff's default rules, plus the
    # ambiguous names (E741-E743), tabs mixed with spaces (E101) and trailing
    # whitespace (W291, W293) that a user's selection often adds. A user
    # lints their tree with the generated package in it.
    done = _run(
        tool("ruff"),
        "check",
        "--isolated",
        "--no-cache",
        "--extend-select",
        "E101,E741,E742,E743,W291,W293",
        *_python_files(case),
    )
    assert done.returncode == 0, done.stdout + done.stderr
