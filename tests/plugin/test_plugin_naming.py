"""Table names become class names as a reader expects: singular, PascalCase, escaped."""

import pytest
from plugin_harness import PLUGIN_DIR
from sqlc_gen_jobtable import _naming

assert PLUGIN_DIR.is_dir()


@pytest.mark.parametrize(
    ("table", "cls"),
    [
        ("users", "User"),
        ("status", "Status"),
        ("statuses", "Status"),
        ("job_statuses", "JobStatus"),
        ("news", "News"),
        ("series", "Series"),
        ("categories", "Category"),
        ("movies", "Movie"),
        ("addresses", "Address"),
        ("boxes", "Box"),
        ("matches", "Match"),
        ("wolves", "Wolf"),
        ("archives", "Archive"),
        ("people", "Person"),
        ("children", "Child"),
        ("analyses", "Analysis"),
        ("class", "Class"),
        ("data", "Data"),
        ("aliases", "Alias"),
        ("bus", "Bus"),
        ("Users", "User"),
        ("none", "None_"),
        ("true", "True_"),
        ("2fa_codes", "T2faCode"),
    ],
)
def test_class_name_of_a_table(table: str, cls: str) -> None:
    assert _naming.pascal(_naming.singular(table)) == cls


@pytest.mark.parametrize(
    ("query", "method"),
    [("GetUser", "get_user"), ("In", "in_"), ("List", "list_"), ("Del", "del_"), ("None", "none")],
)
def test_method_name_of_a_query(query: str, method: str) -> None:
    assert _naming.method(query) == method


def test_every_helper_is_formatted_for_the_default_line_length() -> None:
    # A helper is pasted into generated modules as it is: a line past 88
    # would make the output unformatted for ruff's default.
    from sqlc_gen_jobtable._helpers import ALIASES, HELPERS

    long = [
        f"{name}: {line}"
        for name, source in [*HELPERS.items(), *ALIASES.items()]
        for line in source.splitlines()
        if len(line) > 88
    ]
    assert not long, "\n".join(long)
