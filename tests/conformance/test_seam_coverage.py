"""Every method of the engine seam has a conformance case: a new method without one fails here.

The seam is what the store and the runner call on an engine: ``Engine`` (and
the ``EndedJobs`` capability) and every query of ``Queries``, read from the
protocols themselves. A case says what it covers with ``engine_kits.covers``;
this test reads those marks from the suite's source, so a method is counted
only when a case that runs on every engine names it and calls it (itself or
through a helper function of its module).
"""

import ast
import pathlib

import pytest

from jobtable._engines.base import EndedJobs, Engine, Queries

HERE = pathlib.Path(__file__).parent


def seam_methods() -> set[str]:
    """The public methods of Queries (with every protocol it joins), Engine and EndedJobs."""
    names: set[str] = set()
    for protocol in (Queries, Engine, EndedJobs):
        for cls in protocol.__mro__:
            if cls.__module__.startswith("jobtable."):
                names |= {
                    name
                    for name, value in vars(cls).items()
                    if callable(value) and not name.startswith("_")
                }
    return names


Case = ast.FunctionDef | ast.AsyncFunctionDef


def covered_methods() -> dict[str, list[str]]:
    """Each seam method a conformance case names with covers(), and the cases naming it.

    A case counts only when it takes ``opened`` or ``kit`` (so it runs on
    every engine) and calls each method it names, itself or through a
    function of its module.
    """
    covered: dict[str, list[str]] = {}
    for path in sorted(HERE.glob("test_*.py")):
        module = ast.parse(path.read_text())
        helpers = {node.name: node for node in module.body if isinstance(node, Case)}
        for case in helpers.values():
            for method in marked(case, helpers):
                covered.setdefault(method, []).append(f"{path.name}::{case.name}")
    return covered


def attributes(case: Case, helpers: dict[str, Case]) -> set[str]:
    """The attribute names case reads, itself and through the module's functions it calls."""
    seen: set[str] = set()
    names: set[str] = set()
    todo = [case]
    while todo:
        node = todo.pop()
        for inner in ast.walk(node):
            if isinstance(inner, ast.Attribute):
                names.add(inner.attr)
            elif isinstance(inner, ast.Name) and inner.id in helpers and inner.id not in seen:
                seen.add(inner.id)
                todo.append(helpers[inner.id])
    return names


def marked(case: Case, helpers: dict[str, Case]) -> list[str]:
    """The methods case's covers() names; fails when it does not run per engine or call them."""
    names = [
        arg.value
        for deco in case.decorator_list
        if isinstance(deco, ast.Call)
        and isinstance(deco.func, ast.Name)
        and deco.func.id == "covers"
        for arg in deco.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    ]
    if not names:
        return []
    params = {arg.arg for arg in case.args.args}
    assert params & {"opened", "kit"}, f"{case.name} covers {names} but runs on no engine fixture"
    missing = [name for name in names if name not in attributes(case, helpers)]
    assert not missing, f"{case.name} says it covers {missing} but never calls them"
    return names


def test_every_seam_method_has_a_conformance_case() -> None:
    seam = seam_methods()
    covered = covered_methods()
    uncovered = sorted(seam - covered.keys())
    assert not uncovered, (
        f"{len(uncovered)} seam methods have no conformance case: {uncovered};"
        " add a case under tests/conformance/ marked @covers(...) for each"
    )


def test_conformance_cases_name_only_seam_methods() -> None:
    unknown = sorted(covered_methods().keys() - seam_methods())
    assert not unknown, f"covers() names methods the seam does not have: {unknown}"


def test_the_seam_is_read_from_its_protocols() -> None:
    # A guard on the enumeration: it sees queries of every group and the engine's fronts.
    seam = seam_methods()
    assert {"insert_jobs", "requeue_job", "declare_queue", "send_signal"} <= seam
    assert {"create_workflow", "record_job_step", "register_runner", "search_payloads"} <= seam
    assert {"write", "aread", "write_in", "listen", "listen_ended", "close"} <= seam


def test_a_mark_without_a_call_is_refused() -> None:
    source = (
        "@covers('get_job')\ndef test_x(opened):\n    opened.read(lambda q: q.get_jobs(ids=[]))\n"
    )
    case = ast.parse(source).body[0]
    assert isinstance(case, ast.FunctionDef)
    with pytest.raises(AssertionError, match=r"covers \['get_job'\] but never calls"):
        marked(case, {})
