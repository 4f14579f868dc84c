"""The app's own table, in the same database as jobtable's."""

import sqlalchemy
from sqlalchemy import orm


class Base(orm.DeclarativeBase):
    """The app's tables."""


class User(Base):
    """A user who signed up; welcomed turns true once the welcome job ran."""

    __tablename__ = "users"

    id: orm.Mapped[int] = orm.mapped_column(primary_key=True)
    email: orm.Mapped[str] = orm.mapped_column(sqlalchemy.String(320), unique=True)
    name: orm.Mapped[str] = orm.mapped_column(sqlalchemy.String(200))
    welcomed: orm.Mapped[bool] = orm.mapped_column(default=False)


def open_database(url: str) -> sqlalchemy.Engine:
    """Returns an engine on url, with the app's tables created when missing."""
    engine = sqlalchemy.create_engine(url)
    Base.metadata.create_all(engine)
    return engine
