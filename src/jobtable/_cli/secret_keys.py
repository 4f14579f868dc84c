"""``jobtable secrets new-key`` and ``rotate``: the keys that encrypt secrets in payloads.

The keys come from ``JOBTABLE_SECRET_KEYS``, never from an option: a
command line is seen by other users of the machine and kept in a shell's
history.
"""

from typing import Annotated

import typer

from jobtable._cli.app import (
    JsonOption,
    ListenUrlOption,
    PooledOption,
    StoreOption,
    app,
    emit,
    opened_store,
    reporting,
)
from jobtable._secrets import new_key

secrets = typer.Typer(
    help="Make a secret key; re-encrypt stored secrets under the current one.",
    no_args_is_help=True,
)
"""The ``jobtable secrets`` group."""
app.add_typer(secrets, name="secrets")


@secrets.command("new-key")
def new_secret_key(
    key_id: Annotated[
        str, typer.Argument(help="The key's id: 1 to 32 of A-Z a-z 0-9 _ . -", show_default=False)
    ],
) -> None:
    """Prints a new random key as JOBTABLE_SECRET_KEYS takes it: ID:BASE64.

    Put it first in JOBTABLE_SECRET_KEYS (comma-separated), keep the old keys
    after it, then run `jobtable secrets rotate`.
    """
    with reporting(None):
        typer.echo(new_key(key_id))


@secrets.command("rotate")
def rotate(
    store: StoreOption = None,
    pooled: PooledOption = False,
    listen_url: ListenUrlOption = None,
    as_json: JsonOption = False,
) -> None:
    """Re-encrypts every stored secret under the first key of JOBTABLE_SECRET_KEYS.

    Afterwards no stored job needs the keys after the first, which can be dropped.
    """
    with opened_store(store, pooled, listen_url) as opened:
        count = opened.rotate_secrets()
        current = opened.secret_keys.current if opened.secret_keys else ""
    emit(
        {"resealed": count, "key": current},
        as_json,
        lambda: f"re-encrypted the secrets of {count} job(s) under key {current!r}",
    )
