"""``jobtable grant``: the rights a role needs to use a PostgreSQL store it does not own."""

from typing import Annotated

import typer

from jobtable._cli.app import JsonOption, StoreOption, app, emit, fail, reporting
from jobtable._store import Store


@app.command("grant")
def grant(
    role: Annotated[
        str, typer.Argument(help="The role that runs runners, web processes and the dashboard.")
    ],
    store: StoreOption = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="Run the statements as the store's user (the schema's owner)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Prints the SQL that gives ROLE DML rights on the store's tables, and nothing more.

    USAGE on the schema, SELECT, INSERT, UPDATE and DELETE on jobtable's
    tables, EXECUTE on its functions: no right to create, alter or analyze
    anything, which stays with the owner that runs `jobtable migrate`. With
    --apply, runs them too, as the store's user. Run it again after every
    migrate that upgraded the schema.
    """
    if not store:
        fail("no store: give --store URL or set JOBTABLE_STORE")
    with reporting(store):
        statements = Store.grant(store, role) if apply else Store.grants(store, role)
    emit(
        {"role": role, "applied": apply, "statements": statements},
        as_json,
        lambda: "\n".join(f"{statement};" for statement in statements),
    )
    if not as_json:
        # On stderr, as an SQL comment: stdout stays SQL a DBA may pipe to psql.
        done = "ran" if apply else "printed only, not run (add --apply to run them)"
        typer.echo(f"-- {done}: {len(statements)} statements granting to {role}", err=True)
