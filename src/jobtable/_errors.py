"""The errors jobtable raises.

Every error jobtable raises for a database or lifecycle problem descends
from one root::

    JobtableError
    ├── StoreError      the store cannot be opened or used: a bad path, a file
    │                   that is not a database, a schema newer than this
    │                   library, a database error
    ├── PayloadError    a payload does not fit its kind or cannot be stored
    │                   (also a ValueError); nothing was stored
    ├── ResultError     a handler's result or partial result does not fit its
    │                   kind or is over the size limit, or a stored result no
    │                   longer does (also a ValueError)
    ├── RunnerError     a runner used out of order: register after start, a
    │                   kind registered twice, a second start, a start after
    │                   stop
    ├── NotRunning      a handler published for a job that is no longer
    │                   running under its claim
    ├── StepError       a handler's step was named twice in one attempt, or its
    │                   output does not fit its type or the size limit
    │                   (also a ValueError); nothing was stored
    ├── SecretKeyError  a stored secret's key is not configured or does not
    │                   decrypt it, or a result holds secrets and no key is
    │                   configured; the message names the key id only
    ├── JobNotFound     no job has the id (also a LookupError)
    ├── JobFailed       a job waited for failed; carries its stored message
    ├── JobCancelled    a job waited for was cancelled
    └── WaitTimeout     a job waited for did not end in time (also a
                        TimeoutError); the job goes on

Bad arguments are the standard ``TypeError`` and ``ValueError``.
``Failure`` and ``Retry`` are not errors of jobtable's: a handler raises
``Failure`` to fail its job with a message that is safe to store and show,
and ``Retry`` to ask for a later attempt.
"""

import datetime


class JobtableError(Exception):
    """The root of every error jobtable raises."""


class StoreError(JobtableError):
    """The store cannot be opened or used; the message names the path and the cause.

    Args:
        message: What went wrong, naming the path and the cause.
        transient: The same call may succeed if retried (a lost connection,
            a lock held too long, a full disk); false when the database
            refused the data or the statement itself, which no retry changes.
    """

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class PayloadError(JobtableError, ValueError):
    """A payload does not fit its kind or cannot be stored; nothing was stored."""


class ResultError(JobtableError, ValueError):
    """A result does not fit its kind or its size limit; the message names the kind.

    Raised by publish, storing nothing, and by Kind.get for a stored result
    that no longer validates as the kind's result type (naming the job too).
    """


class RunnerError(JobtableError):
    """A runner was used out of order; the message names the kind or the call."""


class NotRunning(JobtableError):
    """A handler published for a job that is no longer running under its claim."""


class StepError(JobtableError, ValueError):
    """A step (``JobContext.step``) was misused or its output cannot be stored; names the step.

    Raised for a step name used twice in one attempt, an output that is
    not valid data of the step's type or is over the size limit, and a
    stored output that no longer validates. Nothing was stored.
    """


class SecretKeyError(JobtableError):
    """A secret cannot be encrypted or decrypted for want of its key; names the key id only.

    ``key_id`` is the id of the key a stored secret names and the store
    cannot decrypt it with (it lacks that id, or holds another key under
    it); None when no such id is at fault. At an attempt, such a job goes
    back to the queue without using an attempt, for a runner that has the
    key, and the runner logs the key id as an error (see Secrets).

    Args:
        message: What went wrong, naming the key id only.
        key_id: The key id at fault, or None.
    """

    def __init__(self, message: str, *, key_id: str | None = None) -> None:
        super().__init__(message)
        self.key_id = key_id


class JobNotFound(JobtableError, LookupError):
    """No job has the id; Kind.get also raises it for a job of another kind."""


class JobFailed(JobtableError):
    """The job waited for (``Kind.wait``) failed; message is its stored error.

    That is a ``Failure`` message or jobtable's own (MESSAGE_INTERNAL, never
    an exception's text).

    Args:
        job_id: The job that failed.
        message: Its stored error.
    """

    def __init__(self, job_id: str, message: str) -> None:
        super().__init__(f"job {job_id!r} failed: {message}")
        self.job_id = job_id
        self.message = message

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.job_id, self.message))  # picklable: another process may raise it


class JobCancelled(JobtableError):
    """The job waited for (``Kind.wait``) was cancelled; job_id names it.

    Args:
        job_id: The job that was cancelled.
    """

    def __init__(self, job_id: str) -> None:
        super().__init__(f"job {job_id!r} was cancelled")
        self.job_id = job_id

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (type(self), (self.job_id,))


class WaitTimeout(JobtableError, TimeoutError):
    """The job waited for did not end within timeout seconds; it stays queued or running.

    job_id names it, so the caller can wait again or cancel it.

    Args:
        job_id: The job waited for.
        timeout: The seconds waited.
    """

    def __init__(self, job_id: str, timeout: float) -> None:
        super().__init__(f"job {job_id!r} did not end within {timeout:g} s")
        self.job_id = job_id
        self.timeout = timeout

    def __reduce__(self) -> tuple[type, tuple[str, float]]:
        return (type(self), (self.job_id, self.timeout))


class Failure(Exception):
    """A handler error whose message is safe to show and is stored as the job's error.

    Every other exception a handler raises is stored as MESSAGE_INTERNAL; its
    text is logged, never stored.

    Args:
        message: The job's error, as stored and shown.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class Retry(Exception):
    """Raised by a handler to end this attempt and run the job again after ``after``.

    It is no failure: nothing joins the job's error history, and it uses none
    of the job's attempts (its max_attempts grows by one, so the attempt
    number, which fences every write, still counts every claim).

    Args:
        after: How long to wait before the next attempt.

    Raises:
        ValueError: after is not a timedelta of 0 or more.
    """

    def __init__(self, after: datetime.timedelta = datetime.timedelta(0)) -> None:
        if not isinstance(after, datetime.timedelta) or after < datetime.timedelta(0):
            raise ValueError(f"Retry: after must be a timedelta of 0 or more, got {after!r}")
        super().__init__(f"retry after {after}")
        self.after = after


def schema_refusal(where: str, version: int, latest: int) -> str:
    """The StoreError message for a store opened without migrate whose schema is missing or older.

    version is the schema's (0: none), latest this jobtable's; every engine
    says it in the same words.
    """
    if version == 0:
        found = "it has no jobtable schema"
    else:
        found = f"its schema version {version} is older than this jobtable's ({latest})"
    return (
        f"cannot open {where}: {found}; run `jobtable migrate`, or Store.migrate(), "
        "or open it with migrate=True"
    )


for _error in (
    JobtableError,
    StoreError,
    PayloadError,
    ResultError,
    RunnerError,
    NotRunning,
    SecretKeyError,
    JobNotFound,
    JobFailed,
    JobCancelled,
    WaitTimeout,
    Failure,
    Retry,
):
    _error.__module__ = "jobtable"  # tracebacks name the public path
