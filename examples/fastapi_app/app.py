"""The web app: ``uvicorn fastapi_app.app:app`` (from ``examples/``).

``POST /users`` inserts the user and enqueues its welcome job in one
SQLAlchemy transaction: both commit, or neither does. ``GET /jobs/{id}``
returns the job as jobtable stores it; ``GET /users/{id}`` shows whether the
welcome ran.
"""

import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Annotated

import fastapi
import pydantic
import sqlalchemy
from sqlalchemy import orm

import jobtable

from .models import User, open_database
from .settings import Settings
from .tasks import Sent, Welcome, welcome
from .worker import make_runner


class SignUp(pydantic.BaseModel):
    """A sign-up request."""

    email: str
    name: str


class SignedUp(pydantic.BaseModel):
    """The new user's id and the id of the job that welcomes them."""

    user_id: int
    job_id: str


class UserOut(pydantic.BaseModel):
    """A user as the API shows it."""

    id: int
    email: str
    name: str
    welcomed: bool


def create_app(settings: Settings | None = None) -> fastapi.FastAPI:
    """The app on settings (by default from the environment)."""
    settings = settings if settings is not None else Settings.from_environment()

    @contextlib.asynccontextmanager
    async def lifespan(app: fastapi.FastAPI) -> AsyncIterator[None]:
        store = jobtable.Store.open(settings.database)
        database = open_database(settings.sqlalchemy_url)
        app.state.store = store
        app.state.database = database
        runner = None
        if settings.workers > 0:
            runner = make_runner(store, database, workers=settings.workers)
            await runner.start()
        try:
            yield
        finally:
            if runner is not None:
                runner.stop()
                await runner.wait()
            store.close()
            database.dispose()

    app = fastapi.FastAPI(title="jobtable example", lifespan=lifespan)

    def store_of(request: fastapi.Request) -> jobtable.Store:
        store: jobtable.Store = request.app.state.store
        return store

    def session_of(request: fastapi.Request) -> Iterator[orm.Session]:
        with orm.Session(request.app.state.database) as session:
            yield session

    Store = Annotated[jobtable.Store, fastapi.Depends(store_of)]
    Session = Annotated[orm.Session, fastapi.Depends(session_of)]

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/users", status_code=201)
    def sign_up(request: SignUp, store: Store, session: Session) -> SignedUp:
        # A plain def endpoint: FastAPI runs it in a thread, so the sync
        # session and the sync enqueue block no event loop.
        user = User(email=request.email, name=request.name)
        session.add(user)
        try:
            session.flush()  # the user's id, and the unique email checked
        except sqlalchemy.exc.IntegrityError:
            session.rollback()
            raise fastapi.HTTPException(409, "email already signed up") from None
        # The job joins the session's transaction: it exists if and only if
        # the user does, and the commit wakes the runners.
        job_id = welcome.enqueue(store, Welcome(user_id=user.id), conn=session)
        session.commit()
        return SignedUp(user_id=user.id, job_id=job_id)

    @app.get("/users/{user_id}")
    def get_user(user_id: int, session: Session) -> UserOut:
        user = session.get(User, user_id)
        if user is None:
            raise fastapi.HTTPException(404, "user not found")
        return UserOut(id=user.id, email=user.email, name=user.name, welcomed=user.welcomed)

    @app.get("/jobs/{job_id}")
    async def get_job(job_id: str, store: Store) -> jobtable.Job[Sent]:
        try:
            return await welcome.aget(store, job_id)
        except jobtable.JobNotFound:
            raise fastapi.HTTPException(404, "job not found") from None

    return app


app = create_app()
"""The app uvicorn serves, on the settings of the environment."""
