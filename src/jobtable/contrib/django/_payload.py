"""How a Django task call is stored: one jobtable kind for every task, its call as the payload."""

from pydantic import BaseModel, ConfigDict, JsonValue

import jobtable

KIND_NAME = "django.task"
"""The jobtable kind of every job a JobtableBackend enqueues."""


class TaskCall(BaseModel):
    """The payload of a Django task's job: which task, its arguments, and its Django settings.

    ``task`` is the task's ``module_path``, which the worker imports. ``args``
    and ``kwargs`` are stored as JSON: Django normalizes them first (a tuple
    becomes a list), and a value JSON cannot hold as it is (a datetime, a
    set, a dict with non-str keys) is refused at enqueue. ``backend`` is the
    alias the task was enqueued through; ``run_after`` is the time Django was
    given, kept so that the Task read back equals the Task enqueued. Unknown
    fields are refused, so a payload written by another version fails loudly.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str
    args: list[JsonValue]
    kwargs: dict[str, JsonValue]
    backend: str
    run_after: str | None = None


# JsonValue is a type alias, which mypy does not take as a type[R].
TASK_KIND: jobtable.Kind[TaskCall, JsonValue] = jobtable.Kind(
    KIND_NAME,
    TaskCall,
    JsonValue,  # type: ignore[arg-type]
)
"""The kind every Django task is enqueued as; its result is the task's return value, as JSON."""


def task_kind(queue: str) -> jobtable.Kind[TaskCall, JsonValue]:
    """TASK_KIND declared with queue as its default queue, for a worker that consumes queue.

    Tasks are enqueued into their own ``queue_name``, so the kind's default
    queue says nothing about them; a runner, though, refuses a handler for a
    kind whose queue it does not consume.
    """
    return jobtable.Kind(KIND_NAME, TaskCall, JsonValue, queue=queue)  # type: ignore[arg-type]
