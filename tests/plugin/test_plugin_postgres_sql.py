"""``_postgres_sql`` turns sqlc's $N placeholders into psycopg's %(name)s.

psycopg reads every % of a query as a placeholder, so literal ones are
doubled; PostgreSQL reads no placeholder inside a string, a quoted identifier
or a comment, so a $N there stays as written.
"""

import pytest
from plugin_harness import PLUGIN_DIR
from sqlc_gen_jobtable._request import RequestError
from sqlc_gen_jobtable._sql import postgres_sql as _postgres_sql

assert PLUGIN_DIR.is_dir()

NAMES = {1: "id", 2: "name", 10: "tenth"}


def rewrite(sql: str) -> str:
    return _postgres_sql(sql, NAMES, "query Q (q.sql)")


def test_placeholders_become_named_parameters() -> None:
    assert rewrite("SELECT * FROM t WHERE id = $1 AND name = $2") == (
        "SELECT * FROM t WHERE id = %(id)s AND name = %(name)s"
    )


def test_a_repeated_placeholder_names_the_same_parameter() -> None:
    assert rewrite("VALUES ($1, $1)") == "VALUES (%(id)s, %(id)s)"


def test_a_placeholder_is_read_with_all_its_digits() -> None:
    assert rewrite("SELECT $10, $1") == "SELECT %(tenth)s, %(id)s"


def test_a_placeholder_followed_by_a_cast_keeps_the_cast() -> None:
    assert rewrite("SELECT $1::int8") == "SELECT %(id)s::int8"


def test_a_literal_percent_is_doubled() -> None:
    assert rewrite("SELECT 7 % 2") == "SELECT 7 %% 2"


def test_a_percent_inside_a_string_is_doubled() -> None:
    assert rewrite("WHERE name LIKE '%' || $2 || '%'") == (
        "WHERE name LIKE '%%' || %(name)s || '%%'"
    )


def test_a_placeholder_inside_a_string_is_left_alone() -> None:
    assert rewrite("SELECT 'costs $1' WHERE id = $1") == "SELECT 'costs $1' WHERE id = %(id)s"


def test_a_doubled_quote_does_not_end_the_string() -> None:
    assert rewrite("SELECT 'it''s $1', $1") == "SELECT 'it''s $1', %(id)s"


def test_a_placeholder_inside_an_escape_string_is_left_alone() -> None:
    assert rewrite("SELECT E'it\\'s $1', $1") == "SELECT E'it\\'s $1', %(id)s"


def test_a_placeholder_inside_a_quoted_identifier_is_left_alone() -> None:
    assert rewrite('SELECT 1 AS "$1 %", $1') == 'SELECT 1 AS "$1 %%", %(id)s'


def test_a_placeholder_inside_a_dollar_quoted_string_is_left_alone() -> None:
    assert rewrite("SELECT $$ $1 $$, $tag$ it's $2 $tag$, $1") == (
        "SELECT $$ $1 $$, $tag$ it's $2 $tag$, %(id)s"
    )


def test_a_placeholder_inside_a_block_comment_is_left_alone() -> None:
    # The apostrophe must not open a string that swallows the real placeholder.
    assert rewrite("SELECT 1 /* it's $2 */ WHERE id = $1") == (
        "SELECT 1 /* it's $2 */ WHERE id = %(id)s"
    )


def test_a_placeholder_inside_a_line_comment_is_left_alone() -> None:
    assert rewrite("SELECT 1 -- don't use $2\nWHERE id = $1") == (
        "SELECT 1 -- don't use $2\nWHERE id = %(id)s"
    )


def test_a_dollar_inside_an_identifier_is_not_a_placeholder() -> None:
    assert rewrite("SELECT a$1 FROM t WHERE id = $1") == "SELECT a$1 FROM t WHERE id = %(id)s"


def test_a_placeholder_without_a_parameter_is_refused_naming_the_query() -> None:
    with pytest.raises(RequestError, match=r"query Q \(q.sql\): \$3 has no parameter"):
        rewrite("SELECT $3")


def test_an_unterminated_string_is_refused_naming_the_query() -> None:
    with pytest.raises(RequestError, match=r"query Q \(q.sql\): unterminated quote"):
        rewrite("SELECT 'open")
