"""``jobtable.__version__`` is the version pip installed, which is the one pyproject declares."""

import datetime
import importlib.metadata
import pathlib
import re
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


CHANGELOG_RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)


def test_changelog_has_a_section_for_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = {version: day for version, day in CHANGELOG_RELEASE.findall(changelog)}
    assert jobtable.__version__ in released, (
        f"CHANGELOG.md has no '## [{jobtable.__version__}] - YYYY-MM-DD' section"
    )
    datetime.date.fromisoformat(released[jobtable.__version__])


def test_changelog_keeps_unreleased_on_top_and_every_section_in_the_convention() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## .*$", changelog, re.MULTILINE)
    assert sections[0] == "## [Unreleased]"
    assert all(CHANGELOG_RELEASE.fullmatch(s) for s in sections[1:]), sections
    versions = [tuple(map(int, v.split("."))) for v, _ in CHANGELOG_RELEASE.findall(changelog)]
    assert versions == sorted(versions, reverse=True)
