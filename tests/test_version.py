"""``jobtable.__version__`` is the version pip installed, which is the one pyproject declares."""

import importlib.metadata
import pathlib
import tomllib

import jobtable

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_version_is_the_installed_distributions() -> None:
    assert jobtable.__version__ == importlib.metadata.version("jobtable")


def test_version_is_the_one_pyproject_declares() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert jobtable.__version__ == pyproject["project"]["version"]


def test_version_is_a_dunder_outside_all() -> None:
    assert "__version__" not in jobtable.__all__
