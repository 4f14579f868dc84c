"""A job's tags and metadata: checked, merged with its kind's, and encoded for the jobs table.

Tags are a few short strings a job is listed by (``Store.list_jobs(tag=)``);
metadata is a small JSON object the handler and the hooks read
(``ctx.meta``, ``JobRecord.meta``). Both are set at enqueue and never
change. Neither is ever the place for a secret: a kind's metadata model
that holds a ``SecretStr`` or ``SecretBytes`` is refused, and metadata is
stored and shown in clear.
"""

import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

import pydantic

from jobtable._engines.rows import NewJob
from jobtable._errors import PayloadError
from jobtable._secrets import mentions_secrets
from jobtable._typeddict import usable_by_pydantic

M = TypeVar("M")
T = TypeVar("T")

MAX_TAGS = 16
"""The most tags one job may have, its kind's and its enqueue's together."""

MAX_META_BYTES = 8192
"""The most bytes a job's metadata may take as stored JSON."""

_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@+=-]{0,63}")
_TAG_RULE = (
    "1 to 64 characters of letters, digits and _ . : / @ + = -, starting with a letter or digit"
)


def check_tags(where: str, tags: object) -> tuple[str, ...]:
    """Returns tags as a tuple without duplicates, in order; raises ValueError naming a bad one.

    tags is an iterable of str (not one str); each tag is 1 to 64
    characters of ``_TAG_RULE``'s charset, and there are at most MAX_TAGS.
    """
    if isinstance(tags, str | bytes) or not isinstance(tags, Iterable):
        raise TypeError(f"{where}: tags must be a list of str, got {type(tags).__name__}")
    kept: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"{where}: a tag must be a str, got {type(tag).__name__}: {tag!r}")
        if not _TAG.fullmatch(tag):
            raise ValueError(f"{where}: tag {tag[:80]!r} is not {_TAG_RULE}")
        kept[tag] = None
    if len(kept) > MAX_TAGS:
        raise ValueError(f"{where}: a job has at most {MAX_TAGS} tags, got {len(kept)}")
    return tuple(kept)


def check_tag(where: str, tag: object) -> str:
    """Returns tag, a filter of a listing; raises ValueError naming it unless it is a valid tag."""
    if not isinstance(tag, str) or not _TAG.fullmatch(tag):
        raise ValueError(f"{where}: tag must be {_TAG_RULE}, got {tag!r}")
    return tag


def tags_text(tags: tuple[str, ...]) -> str:
    """The tags as the JSON array the jobs table stores."""
    return json.dumps(list(tags), separators=(",", ":")) if tags else "[]"


class MetaCodec(Generic[M]):
    """A kind's metadata: its model M (None: any JSON object), validated and encoded.

    Raises TypeError at declaration for a model pydantic cannot validate, or
    one that holds a secret type.
    """

    __slots__ = ("_adapter", "model")

    def __init__(self, where: str, model: type[M] | None) -> None:
        self.model = model
        self._adapter: pydantic.TypeAdapter[Any] | None = None
        if model is None:
            return
        try:
            self._adapter = pydantic.TypeAdapter(usable_by_pydantic(model))
        except Exception as err:
            raise TypeError(f"{where}: pydantic cannot validate the meta model: {err}") from err
        if mentions_secrets(self._adapter.core_schema):
            raise TypeError(
                f"{where}: the meta model holds a secret type; metadata is stored and shown "
                "in clear, so a secret belongs in the payload (see Secrets)"
            )

    def plain(self, where: str, meta: object) -> dict[str, Any]:
        """meta as a plain JSON object (a dict); raises PayloadError naming what is wrong.

        meta is an instance of the model, or a mapping the model validates
        (any JSON-able mapping without a model); None is the empty object.
        """
        if meta is None:
            return {}
        try:
            if self._adapter is not None:
                meta = self._adapter.dump_python(self._adapter.validate_python(meta), mode="json")
            elif isinstance(meta, Mapping):
                meta = json.loads(json.dumps(dict(meta), allow_nan=False))
        except pydantic.ValidationError as err:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'the value'}: {e['msg']}" for e in err.errors()
            )
            raise PayloadError(f"{where}: invalid meta: {problems}") from None
        except (TypeError, ValueError) as err:
            raise PayloadError(f"{where}: invalid meta: {err}") from None
        if not isinstance(meta, dict) or not all(isinstance(k, str) for k in meta):
            raise PayloadError(f"{where}: meta must be a JSON object, got {type(meta).__name__}")
        return meta

    def encode(self, where: str, meta: Mapping[str, Any]) -> str | None:
        """The stored JSON of meta (None when empty), checked against the model and size limit."""
        plain = self.plain(where, meta)
        if not plain:
            return None
        text = json.dumps(plain, separators=(",", ":"), ensure_ascii=False)
        size = len(text.encode())
        if size > MAX_META_BYTES:
            raise PayloadError(
                f"{where}: meta is {size} bytes as JSON, over the limit of {MAX_META_BYTES}"
            )
        return text

    def decode(self, text: str | None) -> Any:
        """The stored meta as the model (validated), or as a dict without one; None: empty."""
        plain = {} if text is None else json.loads(text)
        if self._adapter is None:
            return plain
        return self._adapter.validate_python(plain)


class Enqueueing:
    """One job an enqueue is about to store, as its enqueue hooks see it.

    ``kind`` and ``payload`` (the typed payload) are read-only; a hook may
    change ``tags`` (a list of str) and ``meta`` (a dict, the metadata's
    JSON form), which are checked after the last hook, or raise to refuse
    the enqueue: then nothing of it is stored and the exception reaches the
    caller of ``enqueue``. The enqueue makes it; a hook never does.

    Args:
        kind: The job's kind.
        payload: The job's payload as given to enqueue.
        tags: The job's tags so far.
        meta: The job's metadata so far.
    """

    __slots__ = ("kind", "meta", "payload", "tags")

    def __init__(self, kind: str, payload: object, tags: list[str], meta: dict[str, Any]) -> None:
        self.kind = kind
        """The job's kind."""
        self.payload = payload
        """The job's payload as given to enqueue; for a workflow's fed node, the node feeding it."""
        self.tags = tags
        """The job's tags so far: its kind's, then its enqueue's."""
        self.meta = meta
        """The job's metadata so far, as a JSON object."""

    def __repr__(self) -> str:
        return f"Enqueueing(kind={self.kind!r}, tags={self.tags!r})"


EnqueueHook = Callable[[Enqueueing], None]
"""A hook run before each job of an enqueue is stored (see ``Store.on_enqueue``)."""


class Labels:
    """A kind's tags, metadata model and enqueue hooks, applied to each job it enqueues."""

    __slots__ = ("hooks", "kind", "meta", "tags")

    def __init__(self, kind: str, where: str, tags: object, meta: type[Any] | None) -> None:
        self.kind = kind
        self.tags = check_tags(where, () if tags is None else tags)
        self.meta: MetaCodec[Any] = MetaCodec(where, meta)
        self.hooks: list[EnqueueHook] = []

    def apply(
        self,
        where: str,
        jobs: list[NewJob],
        payloads: Sequence[object],
        given: Mapping[str, Any],
        hooks: Sequence[EnqueueHook],
    ) -> list[NewJob]:
        """jobs with their tags and metadata: the kind's, the enqueue's given, then the hooks'.

        hooks (the store's, then this kind's) run in order for each job. A
        bad tag or metadata raises naming it; so does a hook, unchanged.
        """
        tags = self.tags
        if "tags" in given and given["tags"] is not None:
            tags = check_tags(where, (*tags, *check_tags(where, given["tags"])))
        meta = self.meta.plain(where, given.get("meta"))
        hooks = [*hooks, *self.hooks]
        if not hooks:
            if not tags and not meta and self.meta.model is None:
                return jobs
            stored = (tags_text(tags), self.meta.encode(where, meta))
            return [job._replace(tags=stored[0], meta=stored[1]) for job in jobs]
        labelled = []
        for job, payload in zip(jobs, payloads, strict=True):
            seen = Enqueueing(self.kind, payload, list(tags), json.loads(json.dumps(meta)))
            for hook in hooks:
                hook(seen)
            job_tags = check_tags(where, seen.tags)
            labelled.append(
                job._replace(tags=tags_text(job_tags), meta=self.meta.encode(where, seen.meta))
            )
        return labelled


def split_labels(overrides: T) -> tuple[T, dict[str, Any]]:
    """overrides (an enqueue's options) without tags and meta, and those two apart."""
    given = cast(dict[str, Any], overrides)
    labelled: dict[str, Any] = {k: given[k] for k in ("tags", "meta") if k in given}
    if not labelled:
        return overrides, labelled
    return cast(T, {k: v for k, v in given.items() if k not in labelled}), labelled


def check_hook(where: str, hook: object) -> None:
    """Raises TypeError naming where unless hook is a plain callable (not a coroutine function)."""
    if not callable(hook):
        raise TypeError(f"{where}: the hook is not callable")
    if inspect.iscoroutinefunction(hook):
        raise TypeError(
            f"{where}: an enqueue hook must be a plain def: enqueue has a sync form, "
            "which has no event loop to await it on"
        )
