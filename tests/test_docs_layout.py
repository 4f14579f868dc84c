"""The documentation keeps up with the code and with itself.

``mkdocs build --strict`` checks the site's links and its API references;
these check what it cannot: that every public name is on a reference page,
that the home page and the README link every page, that the README's links
(which are not part of the site) resolve, and that the figures the pages
state about the code are the code's.
"""

import importlib
import inspect
import pathlib
import re
import sys
from collections.abc import Callable

import pytest
from cli_reference import PAGE, render

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"

# The modules whose public names have reference pages, each page naming them
# one by one (``::: jobtable.Store``) or the module whole (``::: jobtable.otel``).
DOCUMENTED_MODULES = ["jobtable", "jobtable.testing", "jobtable.otel"]


def referenced() -> dict[str, list[str]]:
    """Maps each object a reference page renders (``::: path``) to the pages that render it."""
    found: dict[str, list[str]] = {}
    for page in sorted(REFERENCE.glob("*.md")):
        for path in re.findall(r"^::: ([\w.]+)$", page.read_text(encoding="utf-8"), re.M):
            found.setdefault(path, []).append(page.name)
    return found


def nav_pages() -> list[str]:
    """Every page of the site's nav, relative to docs/, in nav order."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:.*: )?([\w/.-]+\.md)$", nav, re.M)


def links(path: pathlib.Path) -> set[str]:
    """The relative links of a markdown file, without anchors, resolved against docs/ or root."""
    text = path.read_text(encoding="utf-8")
    targets = set()
    for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        targets.add((path.parent / target).resolve().relative_to(ROOT).as_posix())
    return targets


@pytest.mark.parametrize("module", DOCUMENTED_MODULES)
def test_every_public_name_is_on_one_reference_page(module: str) -> None:
    pages = referenced()
    if module in pages:  # the page renders the module whole
        return
    names = importlib.import_module(module).__all__
    missing = [name for name in names if f"{module}.{name}" not in pages]
    assert not missing, f"no page of docs/reference/ renders {missing}"
    twice = {
        name: pages[f"{module}.{name}"] for name in names if len(pages[f"{module}.{name}"]) > 1
    }
    assert not twice, f"rendered on more than one page: {twice}"


def test_the_django_backend_has_its_reference_page() -> None:
    assert "jobtable.contrib.django" in referenced()


def test_the_errors_page_draws_the_tree_of_the_errors_module() -> None:
    docstring = sys.modules["jobtable._errors"].__doc__ or ""
    tree = re.search(r"^    JobtableError\n(?:    .*\n)+", docstring, re.M)
    assert tree is not None
    drawn = "\n".join(line.removeprefix("    ") for line in tree[0].splitlines())
    assert f"```text\n{drawn}\n```" in (REFERENCE / "errors.md").read_text(encoding="utf-8")


def test_the_command_reference_is_written_from_the_commands_definitions() -> None:
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/reference/cli.md differs from the command: "
        "run .venv/bin/python tests/cli_reference.py"
    )


def test_every_page_of_the_site_is_in_the_nav_once() -> None:
    pages = nav_pages()
    on_disk = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    assert sorted(pages) == on_disk


def test_the_home_page_links_every_page_of_the_nav() -> None:
    linked = links(DOCS / "index.md")
    missing = [page for page in nav_pages() if page != "index.md" and f"docs/{page}" not in linked]
    assert not missing, f"docs/index.md does not link {missing}"


@pytest.mark.parametrize("document", ["README.md", "CONTRIBUTING.md", "BENCHMARKS.md"])
def test_the_links_of_the_files_outside_the_site_resolve(document: str) -> None:
    broken = sorted(target for target in links(ROOT / document) if not (ROOT / target).exists())
    assert not broken, f"{document} links to files that do not exist: {broken}"


def query_names(folder: str, files: set[str] | None = None) -> set[str]:
    """The query names of folder's .sql files (only those named in files, if given)."""
    return {
        name
        for path in (ROOT / folder).glob("*.sql")
        if files is None or path.name in files
        for name in re.findall(r"^-- name: (\w+)", path.read_text(encoding="utf-8"), re.M)
    }


def test_how_it_is_built_counts_the_query_names_the_engines_share_as_the_sql_does() -> None:
    shared_files = {path.name for path in (ROOT / "queries").glob("*.sql")}
    sqlite = query_names("queries")
    postgres = query_names("postgres/queries", shared_files)
    assert shared_files <= {path.name for path in (ROOT / "postgres/queries").glob("*.sql")}
    text = " ".join((DOCS / "explanation" / "how-it-is-built.md").read_text().split())
    files = ", ".join(f"`{name.removesuffix('.sql')}`" for name in sorted(shared_files)[:-1])
    last = sorted(shared_files)[-1].removesuffix(".sql")
    assert f"({files} and `{last}`)" in text
    assert f"{len(sqlite & postgres)} query names are in both" in text
    assert f"{len(sqlite - postgres)} are SQLite's only" in text
    assert f"{len(postgres - sqlite)} PostgreSQL's only" in text


FEATURES = (
    "flow control",
    "workflows",
    "waits and signals",
    "batches",
    "steps",
    "unique",
    "periodic",
    "debounce",
)
"""The features that span layers, each a row of how-it-is-built's table of where it lives."""


def feature_rows() -> dict[str, list[str]]:
    """Each row of how-it-is-built's feature table: its feature, and its cells after that."""
    text = (DOCS / "explanation" / "how-it-is-built.md").read_text(encoding="utf-8")
    section = text.split("## Where each feature lives\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split(" | ") for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): cells[1:] for cells in rows[1:]}


def named_places(cell: str) -> list[tuple[pathlib.Path, list[str]]]:
    """Each path a cell names (Python under src/jobtable/, SQL from the root), with its names.

    A path's names are those in backticks in the parentheses that follow it:
    ``_flow.py (`Queue`, `Rate`)`` names Queue and Rate in _flow.py.
    """
    places = []
    for path, names in re.findall(r"`([\w/.]+\.(?:py|sql))`(?: \(([^)]*)\))?", cell):
        where = ROOT / path if path.endswith(".sql") else ROOT / "src" / "jobtable" / path
        places.append((where, re.findall(r"`([\w.]+)`", names)))
    return places


def test_how_it_is_built_says_where_each_feature_that_spans_layers_lives() -> None:
    rows = feature_rows()
    assert set(FEATURES) <= set(rows), f"features without a row: {set(FEATURES) - set(rows)}"
    missing = []
    for feature, cells in rows.items():
        assert len(cells) == 6, f"{feature}: want declaration to dashboard, got {cells}"
        assert named_places(cells[0]), f"{feature}: its declaration names no module"
        for where, names in (place for cell in cells for place in named_places(cell)):
            if not where.is_file():
                missing.append(f"{feature}: {where.relative_to(ROOT)} does not exist")
                continue
            words = set(re.findall(r"\w+", where.read_text(encoding="utf-8")))
            missing += [
                f"{feature}: {where.relative_to(ROOT)} has no {part} (of {name})"
                for name in names
                for part in name.split(".")
                if part not in words
            ]
    assert not missing, "\n".join(missing)


def test_the_feature_table_check_finds_a_missing_path_and_name() -> None:
    cell = "`_flow.py` (`Queue`, `NoSuchName`), `_runner/no_such.py`, `queries/flow.sql`"
    places = named_places(cell)
    assert [where.relative_to(ROOT).as_posix() for where, _ in places] == [
        "src/jobtable/_flow.py",
        "src/jobtable/_runner/no_such.py",
        "queries/flow.sql",
    ]
    assert places[0][1] == ["Queue", "NoSuchName"]
    assert not places[1][0].is_file()
    assert "NoSuchName" not in places[0][0].read_text(encoding="utf-8")


def test_the_home_page_and_the_reference_index_list_the_same_reference_pages() -> None:
    pages = {f"docs/reference/{path.name}" for path in REFERENCE.glob("*.md")} - {
        "docs/reference/index.md"
    }
    assert pages <= links(REFERENCE / "index.md")
    assert pages <= links(DOCS / "index.md")


# The public callables whose docstrings the reference renders: every function
# of a documented module's __all__, and every public method (and constructor)
# of its classes that jobtable defines.
_ASYNC_FORM = re.compile(r"^The (a)?sync form of ")


def public_callables() -> list[tuple[str, Callable[..., object], str]]:
    """(qualified name, function, the docstring that documents its parameters), each once."""
    found: dict[object, tuple[str, Callable[..., object], str]] = {}
    for module_name in DOCUMENTED_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value):
                found.setdefault(value, (f"{module_name}.{name}", value, value.__doc__ or ""))
            elif inspect.isclass(value):
                for owner in value.__mro__:
                    if not owner.__module__.startswith("jobtable"):
                        continue
                    if owner is not value and getattr(module, owner.__name__, None) is owner:
                        continue  # a public base class: found under its own name
                    for attr, raw in vars(owner).items():
                        if attr.startswith("_") and attr != "__init__":
                            continue
                        if isinstance(raw, staticmethod | classmethod):
                            raw = raw.__func__
                        if not inspect.isfunction(raw):
                            continue
                        if attr == "__init__":
                            if owner is not value:
                                continue
                            # mkdocstrings merges __init__'s docstring into the class's.
                            parts = (value.__doc__ or "", raw.__doc__ or "")
                            doc = "\n\n".join(inspect.cleandoc(part) for part in parts)
                        else:
                            doc = raw.__doc__ or ""
                        found.setdefault(raw, (f"{module_name}.{name}.{attr}", raw, doc))
    return sorted(found.values(), key=lambda entry: entry[0])


def documented_parameters(doc: str) -> set[str]:
    """The names an ``Args:`` section of doc lists (``*args`` and ``**options`` as written)."""
    lines = inspect.cleandoc(doc).splitlines()
    if "Args:" not in lines:
        return set()
    section = []
    for line in lines[lines.index("Args:") + 1 :]:
        if line and not line.startswith(" "):
            break
        section.append(line)
    return {
        match[1]
        for line in section
        if (match := re.match(r"    (\*{0,2}\w+):", line)) and not line.startswith("     ")
    }


def parameters(fn: Callable[..., object]) -> set[str]:
    """fn's parameters as an Args section names them, self and cls left out."""
    names = set()
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.name in ("self", "cls"):
            continue
        prefix = ""
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            prefix = "*"
        elif parameter.kind is inspect.Parameter.VAR_KEYWORD:
            prefix = "**"
        names.add(prefix + parameter.name)
    return names


def test_the_public_callables_are_found() -> None:
    names = {name for name, _, _ in public_callables()}
    assert {"jobtable.Store.open", "jobtable.Kind.enqueue", "jobtable.testing.drain"} <= names


@pytest.mark.parametrize(
    ("name", "fn", "doc"), public_callables(), ids=[n for n, _, _ in public_callables()]
)
def test_every_public_callable_documents_its_parameters_in_google_style(
    name: str, fn: Callable[..., object], doc: str
) -> None:
    summary = doc.strip().split("\n", 1)[0]
    if _ASYNC_FORM.match(summary) and "Args:" not in doc:
        return  # an async form names its sync form, which documents them
    assert summary, f"{name} has no docstring"
    wanted = parameters(fn)
    if wanted:
        assert documented_parameters(doc) == wanted, f"{name}: its Args: section lists other names"
    returns = inspect.signature(fn).return_annotation
    if wanted and name.rsplit(".", 1)[1] != "__init__" and returns not in (None, "None"):
        assert "\nReturns:\n" in inspect.cleandoc(doc), f"{name} has no Returns: section"
