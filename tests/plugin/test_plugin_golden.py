"""The plugin's output for each case under cases/ is exactly golden/<case>/.

To accept a deliberate change of output, regenerate the goldens and review
the diff before committing it:

    UPDATE_GOLDEN=1 .venv/bin/pytest tests/plugin/test_plugin_golden.py

With UPDATE_GOLDEN set, each golden directory is replaced by a fresh
generation (stale files removed) and the comparison tests pass.
"""

import difflib
import os
import pathlib
import shutil

import pytest
from plugin_harness import CASE_NAMES, GOLDEN, generate_case, read_tree

UPDATE = bool(os.environ.get("UPDATE_GOLDEN"))


@pytest.fixture(scope="module", params=CASE_NAMES)
def case(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def generated(case: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    # One generation per case serves every comparison: PostgreSQL cases take
    # about a second each.
    files = generate_case(case, tmp_path_factory.mktemp(case))
    if UPDATE:
        golden = GOLDEN / case
        shutil.rmtree(golden, ignore_errors=True)
        golden.mkdir(parents=True)
        for name, content in files.items():
            (golden / name).write_bytes(content)
    return files


def test_every_case_has_a_golden_directory() -> None:
    assert CASE_NAMES, "no cases found"
    missing = [c for c in CASE_NAMES if not (GOLDEN / c).is_dir()]
    assert not missing, f"run UPDATE_GOLDEN=1 to create goldens for {missing}"


def test_every_golden_directory_has_a_case() -> None:
    stale = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name not in CASE_NAMES)
    assert not stale, f"golden directories without a case: {stale}"


@pytest.mark.slow
def test_generates_exactly_the_golden_file_names(case: str, generated: dict[str, bytes]) -> None:
    golden = read_tree(GOLDEN / case)
    assert sorted(generated) == sorted(golden), (
        f"missing: {sorted(set(golden) - set(generated))}, "
        f"extra: {sorted(set(generated) - set(golden))}"
    )


@pytest.mark.slow
def test_generates_the_golden_bytes(case: str, generated: dict[str, bytes]) -> None:
    golden = read_tree(GOLDEN / case)
    differing = [
        name for name in sorted(generated) if name in golden and golden[name] != generated[name]
    ]
    diff = "".join(
        line
        for name in differing
        for line in difflib.unified_diff(
            golden[name].decode(errors="replace").splitlines(keepends=True),
            generated[name].decode(errors="replace").splitlines(keepends=True),
            f"golden/{case}/{name}",
            f"generated/{name}",
        )
    )
    assert not differing, f"differs from the golden (UPDATE_GOLDEN=1 to accept):\n{diff}"


@pytest.mark.slow
def test_generation_is_deterministic(
    case: str, generated: dict[str, bytes], tmp_path: pathlib.Path
) -> None:
    assert generate_case(case, tmp_path) == generated
