"""The welcome job's handler, and the worker process: ``python -m fastapi_app.worker``.

The worker process needs the same ``EXAMPLE_DATABASE`` as the web app; its
runner name comes from ``JOBTABLE_WORKER`` when set (one per process slot).
"""

import logging
import os

import sqlalchemy
from sqlalchemy import orm

import jobtable

from .models import User, open_database
from .settings import Settings
from .tasks import Sent, Welcome, welcome


def make_runner(
    store: jobtable.Store, database: sqlalchemy.Engine, *, workers: int = 4, name: str | None = None
) -> jobtable.Runner:
    """A runner of store with the welcome handler attached, which writes through database."""
    runner = jobtable.Runner(store, workers=workers, name=name)

    @runner.handler(welcome)
    def send_welcome(ctx: jobtable.JobContext[Sent], payload: Welcome) -> Sent:
        # A plain def handler runs in a thread of its own, so it may block.
        with orm.Session(database) as session, session.begin():
            user = session.get(User, payload.user_id)
            if user is None:
                raise jobtable.Failure(f"No user {payload.user_id}.")
            user.welcomed = True
            return Sent(user_id=user.id, message=f"Welcome, {user.name}!")

    return runner


def main() -> None:
    """Runs the worker until SIGINT or SIGTERM."""
    logging.basicConfig(level=logging.INFO)
    settings = Settings.from_environment()
    database = open_database(settings.sqlalchemy_url)
    with jobtable.Store.open(settings.database) as store:
        make_runner(store, database, name=os.environ.get("JOBTABLE_WORKER")).run()
    database.dispose()


if __name__ == "__main__":
    main()
