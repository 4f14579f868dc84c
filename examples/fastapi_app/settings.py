"""Where the example's processes find their database, and how many workers the web process runs."""

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class Settings:
    """The example's settings; from_environment reads them from ``EXAMPLE_*`` variables."""

    database: str = "app.db"
    """A SQLite file or a ``postgresql://`` URL: jobtable's store and the app's tables, both."""

    workers: int = 2
    """Workers of the runner in the web process's lifespan; 0 runs none (a worker process does)."""

    @classmethod
    def from_environment(cls) -> "Settings":
        """Settings from ``EXAMPLE_DATABASE`` and ``EXAMPLE_WORKERS``, defaults for those unset."""
        return cls(
            database=os.environ.get("EXAMPLE_DATABASE", cls.database),
            workers=int(os.environ.get("EXAMPLE_WORKERS", cls.workers)),
        )

    @property
    def sqlalchemy_url(self) -> str:
        """The same database as a SQLAlchemy URL: the sqlite3 or the psycopg (3) driver."""
        for scheme in ("postgresql://", "postgres://"):
            if self.database.startswith(scheme):
                return "postgresql+psycopg://" + self.database.removeprefix(scheme)
        return f"sqlite:///{self.database}"
