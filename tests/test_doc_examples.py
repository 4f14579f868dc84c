"""The python examples of README.md and docs/ compile, and the complete ones type-check and run.

The rule (CONTRIBUTING.md states it for writers):

- every ```python block compiles; a fragment may ``await`` at top level;
- a block whose first line names a file (``# tasks.py``, ``# tasks.py: why``)
  is that file of the documents' example project: the other examples import
  it by that name, it is type-checked, and a name given to two blocks must
  hold the same text;
- a block just after the line ``<!-- run -->`` is a complete program: it is
  type-checked with ``mypy --strict``, and run alone in a fresh temporary
  directory that holds the named files, where ``Store.open("app.db")`` opens
  a new SQLite file; it must exit 0.
"""

import ast
import os
import pathlib
import subprocess
import sys

import pytest
from doc_blocks import ROOT, Block, blocks

BLOCKS = blocks()
RUNNABLE = [block for block in BLOCKS if block.runnable]
NAMED = [block for block in BLOCKS if block.file_name]

RUN_TIMEOUT = 120
"""Seconds a runnable example may take, on a loaded machine (each takes about one)."""


def _project(tmp_path: pathlib.Path) -> pathlib.Path:
    """A fresh directory holding every named file of the documents."""
    for block in NAMED:
        assert block.file_name is not None
        (tmp_path / block.file_name).write_text(block.text, encoding="utf-8")
    return tmp_path


def _env() -> dict[str, str]:
    """The test's environment with nothing that would import the checkout's examples."""
    return {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}


def test_the_documents_hold_python_examples_and_runnable_ones() -> None:
    documents = {block.document.relative_to(ROOT).as_posix() for block in BLOCKS}
    assert "README.md" in documents
    assert any(name.startswith("docs/guides/") for name in documents)
    assert len(RUNNABLE) >= 5


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_every_python_block_compiles(block: Block) -> None:
    try:
        compile(block.text, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    except SyntaxError as err:
        pytest.fail(f"{block.where}: {err}")


def test_a_file_named_twice_holds_the_same_text_each_time() -> None:
    seen: dict[str, Block] = {}
    for block in NAMED:
        assert block.file_name is not None
        first = seen.setdefault(block.file_name, block)
        assert first.text == block.text, (
            f"{block.where} names {block.file_name} as {first.where} does, with other text"
        )


@pytest.mark.slow
def test_the_named_files_and_runnable_examples_pass_mypy_strict(tmp_path: pathlib.Path) -> None:
    project = _project(tmp_path)
    for n, block in enumerate(RUNNABLE):
        if block.file_name is None:
            (project / f"example_{n}.py").write_text(block.text, encoding="utf-8")
    (project / "mypy.ini").write_text(
        "[mypy]\nstrict = True\nplugins = pydantic.mypy\nenable_error_code = ignore-without-code\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            "mypy.ini",
            "--cache-dir",
            str(ROOT / ".mypy_cache" / "doc_examples"),
            ".",
        ],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    names = {f"example_{n}.py": block.where for n, block in enumerate(RUNNABLE)}
    names |= {block.file_name: block.where for block in NAMED if block.file_name}
    report = done.stdout
    for file, where in names.items():
        report = report.replace(file, f"{where} ({file})")
    assert done.returncode == 0, report + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("block", RUNNABLE, ids=[block.where for block in RUNNABLE])
def test_each_runnable_example_runs_on_a_temporary_sqlite_file(
    block: Block, tmp_path: pathlib.Path
) -> None:
    project = _project(tmp_path)
    script = project / "__example__.py"
    script.write_text(block.text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{block.where} exited {done.returncode}:\n{done.stderr}"
