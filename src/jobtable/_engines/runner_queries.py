"""The seam's queries for runners' registrations: who runs, where, and who is dead.

``jobtable._engines.base.Queries`` includes these; each engine's adapter has
them. Times go in as UTC text and come out as aware UTC datetimes.
"""

from collections.abc import Sequence
from typing import Protocol

from jobtable._engines.operator_queries import RunnerRow


class PeerRow(Protocol):
    """A runner of the asking runner's host, and the process it recorded there."""

    @property
    def name(self) -> str: ...
    @property
    def process(self) -> str | None: ...


class RunnerQueries(Protocol):
    """The queries of queries/jobs.sql on the runners table, named as there."""

    def register_runner(
        self, *, name: str, now: str, host: str | None, process: str | None
    ) -> None:
        """Registers runner name, replacing one of that name, with its host and process."""
        ...

    def heartbeat_runner(self, *, now: str, name: str) -> int: ...

    def set_runner_missing_keys(self, *, missing_keys: str | None, name: str) -> None:
        """Records the secret key ids runner name lacked, a sorted JSON array; None for none."""
        ...

    def get_runner(self, *, name: str, now: str, lease: float) -> RunnerRow | None:
        """The runner's registration; alive tells whether it beat within lease seconds."""
        ...

    def delete_runner(self, *, name: str) -> None: ...

    def list_runners_on_host(self, *, host: str | None, name: str) -> Sequence[PeerRow]:
        """The runners that recorded host, with their process; never the one named name."""
        ...

    def delete_runner_process(self, *, name: str, host: str | None, process: str | None) -> int:
        """Forgets runner name while its row records process on host; returns rows deleted.

        On PostgreSQL the deleted row keeps any other process from
        registering under name until the transaction ends.
        """
        ...

    def delete_dead_runners(self, *, now: str, lease: float, name: str) -> int:
        """Forgets the runners dead for lease seconds, never the one named name."""
        ...

    def interrupt_jobs_of_dead_runners(
        self, *, error: str, now: str, lease: float, runner: str
    ) -> int:
        """Ends the attempts of the running jobs of runners dead for lease seconds.

        Never those of runner, which asks and is alive. Which clock decides is
        the engine's: PostgreSQL compares the server's own times, so runners
        with skewed clocks agree.
        """
        ...

    def jobs_statistics_stale(self) -> bool:
        """Whether the planner's statistics of jobs describe a far smaller table.

        PostgreSQL: never gathered, or gathered at under half today's live
        rows. SQLite: never, since jobtable gathers none there (no ANALYZE),
        so its plans do not follow the table's size.
        """
        ...

    def analyze_jobs(self) -> None:
        """Gathers the planner's statistics of jobs (PostgreSQL; SQLite: nothing).

        It raises once it has waited 100 ms for a vacuum of jobs that holds the table.
        """
        ...
