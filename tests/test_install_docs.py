"""The install instructions name every extra a user can install, as pyproject declares them."""

import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]

FOR_DEVELOPING_JOBTABLE = {"dev", "docs", "bench"}
"""The extras that make installs for working on jobtable itself, not for using it."""


def users_extras() -> set[str]:
    """The extras pyproject declares for users of jobtable."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(pyproject["project"]["optional-dependencies"]) - FOR_DEVELOPING_JOBTABLE


def test_the_install_guide_has_a_row_for_every_extra() -> None:
    text = (ROOT / "docs" / "guides" / "install.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `([a-z]+)` \|", text, re.MULTILINE))
    assert rows == users_extras()


def test_the_readme_names_every_extra() -> None:
    install = (ROOT / "README.md").read_text(encoding="utf-8").split("## Install", 1)[1]
    install = install.split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z]+)`", install)) | set(re.findall(r"\[([a-z]+)\]", install))
    assert users_extras() <= named, users_extras() - named
