"""The public API's types, tested: mypy --strict passes real usage and rejects misuse.

``pass_usage.py`` must type-check cleanly. Each ``fail_*.py`` must fail with
exactly the errors its lines announce in a ``# E: <error code>`` comment, and
no others, so a misuse that starts to type-check (an API that got looser)
fails this test as much as new noise does. A comment may also quote what the
message must say, ``# E: arg-type "Thumbnail], Progress]"``: the messages a
user reads are then tested too (the troubleshooting guide explains them).
"""

import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

HERE = pathlib.Path(__file__).parent
ROOT = HERE.parents[1]
EXAMPLES = sorted([HERE / "pass_usage.py", *HERE.glob("fail_*.py")])

_EXPECTED = re.compile(r"#\s*E:\s*([\w-]+)(?:\s+\"(?P<says>[^\"]*)\")?\s*$")
_REPORTED = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*)\[(?P<code>[\w-]+)\]$"
)

Errors = set[tuple[str, int, str]]


def expected_errors(path: pathlib.Path) -> Errors:
    errors: Errors = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECTED.search(line)
        if match:
            errors.add((path.name, number, match.group(1)))
    return errors


def expected_messages(path: pathlib.Path) -> dict[int, str]:
    """The lines of path whose comment quotes what mypy's message must say, and that text."""
    quoted: dict[int, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECTED.search(line)
        if match and match.group("says"):
            quoted[number] = match.group("says")
    return quoted


@pytest.fixture(scope="module")
def mypy_output() -> str:
    """Runs mypy once, with the project's configuration, over every example."""
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", *map(str, EXAMPLES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    if completed.returncode not in (0, 1) or completed.stderr.strip():
        pytest.fail(f"mypy did not run: {completed.returncode}\n{completed.stderr}")
    return completed.stdout


@pytest.fixture(scope="module")
def reported(mypy_output: str) -> Errors:
    """The errors mypy reported, by file, line and code."""
    errors: Errors = set()
    for line in mypy_output.splitlines():
        match = _REPORTED.match(line)
        if match:
            name = pathlib.Path(match.group("path")).name
            errors.add((name, int(match.group("line")), match.group("code")))
        elif ": error:" in line:
            pytest.fail(f"mypy reported an error without a code: {line}")
    return errors


def test_every_misuse_example_announces_an_error() -> None:
    failing = [p for p in EXAMPLES if p.name.startswith("fail_")]
    assert len(failing) >= 3
    assert all(expected_errors(path) for path in failing)
    assert expected_errors(HERE / "pass_usage.py") == set()


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_mypy_reports_exactly_the_announced_errors(example: pathlib.Path, reported: Errors) -> None:
    got = {error for error in reported if error[0] == example.name}
    assert sorted(got) == sorted(expected_errors(example))


@pytest.mark.parametrize(
    "example", [p for p in EXAMPLES if expected_messages(p)], ids=lambda p: p.name
)
def test_mypy_says_what_the_quoted_messages_say(example: pathlib.Path, mypy_output: str) -> None:
    said: dict[int, str] = {}
    for line in mypy_output.splitlines():
        match = _REPORTED.match(line)
        if match and pathlib.Path(match.group("path")).name == example.name:
            said[int(match.group("line"))] = said.get(int(match.group("line")), "") + line
    for number, text in expected_messages(example).items():
        assert text in said.get(number, ""), f"{example.name}:{number}: {said.get(number)}"
