"""jobtable.testing's public surface: exactly its names, each documented; modules kept small."""

import ast
import inspect
import pathlib

import pytest

import jobtable.testing
from jobtable.testing import pytest_plugin

EXPECTED = {
    "ANY",
    "Criteria",
    "FrozenClock",
    "aassert_enqueued",
    "aassert_not_enqueued",
    "aenqueued",
    "assert_enqueued",
    "assert_not_enqueued",
    "drain",
    "drain_sync",
    "enqueued",
}
PACKAGE = pathlib.Path(jobtable.testing.__file__).parent


def test_all_is_exactly_the_public_names() -> None:
    assert set(jobtable.testing.__all__) == EXPECTED
    assert len(jobtable.testing.__all__) == len(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED - {"ANY"}))
def test_every_public_name_has_a_docstring(name: str) -> None:
    value = getattr(jobtable.testing, name)
    assert inspect.isclass(value) or inspect.isfunction(value)
    assert (value.__doc__ or "").strip(), f"jobtable.testing.{name} has no docstring"


def test_any_has_a_docstring_under_its_assignment() -> None:
    body = ast.parse((PACKAGE / "_assertions.py").read_text(encoding="utf-8")).body
    [index] = [
        i
        for i, node in enumerate(body)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "ANY"
    ]
    after = body[index + 1]
    assert isinstance(after, ast.Expr)
    assert isinstance(after.value, ast.Constant)


def test_the_plugin_documents_its_fixtures() -> None:
    for name in ("jobtable_store", "jobtable_clock", "jobtable_target", "postgres_schema"):
        assert (getattr(pytest_plugin, name).__doc__ or "").strip(), name


def test_no_module_is_over_400_lines() -> None:
    lengths = {
        p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.glob("*.py")
    }
    assert {name: n for name, n in lengths.items() if n > 400} == {}
