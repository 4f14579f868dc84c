"""A runner's trouble reaching its store, logged once per episode instead of once per retry.

A server that refuses new connections (``too many clients``), restarts or
drops off the network makes every service of a runner fail and retry with
backoff: the claims, the outcome writes, the heartbeat, the cancel watch.
Logged at each retry, that is a traceback every few seconds per service
for as long as it lasts. ``StoreTrouble`` turns it into two lines: a
warning when the first transient error arrives, and a line when the store
answers again, with how many tries failed and for how long.
"""

import logging
import threading
import time

from jobtable._errors import StoreError


class StoreTrouble:
    """Logs a runner's transient store errors once per episode; others each time.

    An episode begins with a transient StoreError (``StoreError.transient``:
    a lost connection, a server refusing connections, a pool that stayed
    busy) and ends with the next operation that lands (``landed``). The
    first error of an episode is a warning, with the error's traceback;
    those after it are DEBUG records; the end is an INFO record with the
    count and the duration. Any other exception is logged with its
    traceback at ERROR every time: it is a refusal or a bug, not an outage.
    Safe from any thread.
    """

    def __init__(self, logger: logging.Logger, runner: str) -> None:
        self._logger = logger
        self._runner = runner
        self._lock = threading.Lock()
        # When the episode under way began (monotonic), None between episodes.
        self._since: float | None = None
        self._failures = 0

    def failed(self, message: str, err: BaseException, **extra: object) -> None:
        """Logs message ("claim jobs; retrying") for err, as this docstring's class says.

        Every record carries err's traceback. extra goes into the record,
        with the runner's name.
        """
        fields = {"runner": self._runner, **extra}
        if not (isinstance(err, StoreError) and err.transient):
            self._logger.error(message, exc_info=err, extra=fields)
            return
        with self._lock:
            first = self._since is None
            if first:
                self._since = time.monotonic()
            self._failures += 1
        if first:
            self._logger.warning(message, exc_info=err, extra=fields)
        else:
            self._logger.debug(message, exc_info=err, extra=fields)

    def landed(self) -> None:
        """Notes an operation that reached the store: ends the episode under way, if any."""
        if self._since is None:
            return
        with self._lock:
            since, failures = self._since, self._failures
            if since is None:
                return
            self._since = None
            self._failures = 0
        self._logger.info(
            "the store answers again after %d failed tries over %.1f s",
            failures,
            time.monotonic() - since,
            extra={"runner": self._runner},
        )
