"""Tags and metadata: set per kind and per enqueue, checked, stored, read back and listed.

Every test runs on both engines (the ``store`` fixture).
"""

import sqlite3
from collections.abc import Callable

import pydantic
import pytest

import jobtable
from jobtable._labels import MAX_META_BYTES, MAX_TAGS


class Tenant(pydantic.BaseModel):
    tenant: str
    request_id: str | None = None


@pytest.fixture
def job_tags(store_target: str) -> "Callable[[], list[tuple[str, int]]]":
    """Reads every row of the job_tags side table, sorted, through the engine's driver."""

    def read() -> list[tuple[str, int]]:
        sql = "SELECT tag, seq FROM job_tags ORDER BY tag, seq"
        if store_target.startswith("postgresql"):
            import psycopg

            with psycopg.connect(store_target) as pg:
                return [(str(t), int(s)) for t, s in pg.execute(sql).fetchall()]
        conn = sqlite3.connect(store_target)
        try:
            return [(str(t), int(s)) for t, s in conn.execute(sql).fetchall()]
        finally:
            conn.close()

    return read


def test_a_job_has_its_kinds_tags_then_its_enqueues_without_duplicates(
    store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int, tags=["billing", "nightly"])
    job_id = kind.enqueue(store, {"n": 1}, tags=["customer:42", "billing"])
    assert store.inspect(job_id).tags == ["billing", "nightly", "customer:42"]
    untagged = jobtable.Kind("plain", dict[str, int], int).enqueue(store, {"n": 1})
    assert store.inspect(untagged).tags == []
    assert store.inspect(untagged).meta == {}


@pytest.mark.parametrize(
    ("tags", "error", "message"),
    [
        ("billing", TypeError, "tags must be a list of str"),
        ([1], TypeError, "a tag must be a str"),
        ([""], ValueError, "tag '' is not 1 to 64 characters"),
        (["has space"], ValueError, "tag 'has space' is not"),
        (["x" * 65], ValueError, "is not 1 to 64 characters"),
        (["-leading"], ValueError, "starting with a letter or digit"),
        ([f"t{n}" for n in range(MAX_TAGS + 1)], ValueError, f"at most {MAX_TAGS} tags, got"),
    ],
)
def test_a_bad_tag_is_refused_naming_it_and_nothing_is_stored(
    store: jobtable.Store, tags: object, error: type[Exception], message: str
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int)
    with pytest.raises(error, match=message):
        kind.enqueue(store, {"n": 1}, tags=tags)  # type: ignore[call-overload]
    assert store.list_jobs() == []
    with pytest.raises(error, match=message):
        jobtable.Kind("bad", dict[str, int], int, tags=tags)  # type: ignore[arg-type]


def test_list_jobs_by_tag_pages_newest_first_and_combines_with_other_filters(
    store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int)
    other = jobtable.Kind("pong", dict[str, int], int)
    tagged = [kind.enqueue(store, {"n": n}, tags=["batch-7"]) for n in range(5)]
    kind.enqueue(store, {"n": 9}, tags=["batch-8"])
    pong = other.enqueue(store, {"n": 0}, tags=["batch-7"])
    store.cancel(tagged[1])
    assert [r.id for r in store.list_jobs(tag="batch-7")] == [pong, *reversed(tagged)]
    paged: list[str] = []
    before = None
    while page := store.list_jobs(tag="batch-7", limit=2, before=before):
        paged += [r.id for r in page]
        before = page[-1].seq
    assert paged == [pong, *reversed(tagged)]
    assert [r.id for r in store.list_jobs(tag="batch-7", kind="pong")] == [pong]
    assert [r.id for r in store.list_jobs(tag="batch-7", status="cancelled")] == [tagged[1]]
    assert [r.id for r in store.list_jobs(tag="batch-7", queue="default", kind="ping")] == list(
        reversed(tagged)
    )
    assert store.list_jobs(tag="nobody") == []
    with pytest.raises(ValueError, match="list_jobs: tag must be"):
        store.list_jobs(tag="no spaces allowed")


def test_a_deleted_job_leaves_no_tag_entry(
    store: jobtable.Store, job_tags: Callable[[], list[tuple[str, int]]]
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int)
    kept = kind.enqueue(store, {"n": 1}, tags=["a"])
    gone = kind.enqueue(store, {"n": 2}, tags=["a", "b"])
    store.cancel(gone)
    store.delete(gone)
    seq = store.inspect(kept).seq
    assert job_tags() == [("a", seq)]


def test_metadata_is_validated_by_the_kinds_model_and_read_back_as_json(
    store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int, meta=Tenant)
    job_id = kind.enqueue(store, {"n": 1}, meta=Tenant(tenant="acme"))
    assert store.inspect(job_id).meta == {"tenant": "acme", "request_id": None}
    from_dict = kind.enqueue(store, {"n": 1}, meta={"tenant": "globex"})
    assert store.inspect(from_dict).meta["tenant"] == "globex"
    with pytest.raises(jobtable.PayloadError, match="enqueue 'ping': invalid meta"):
        kind.enqueue(store, {"n": 1}, meta={"tenant": 5})
    assert len(store.list_jobs()) == 2


def test_a_kind_whose_meta_model_has_required_fields_refuses_an_enqueue_without_meta(
    store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int, meta=Tenant)
    with pytest.raises(jobtable.PayloadError, match="invalid meta: tenant: Field required"):
        kind.enqueue(store, {"n": 1})
    # An enqueue hook may supply it.
    kind.on_enqueue(lambda job: job.meta.setdefault("tenant", "from-hook"))
    job_id = kind.enqueue(store, {"n": 1})
    assert store.inspect(job_id).meta == {"tenant": "from-hook", "request_id": None}


def test_metadata_without_a_model_is_any_json_object_under_the_size_limit(
    store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int)
    job_id = kind.enqueue(store, {"n": 1}, meta={"trace": [1, 2], "who": "ops"})
    assert store.inspect(job_id).meta == {"trace": [1, 2], "who": "ops"}
    with pytest.raises(jobtable.PayloadError, match="meta must be a JSON object"):
        kind.enqueue(store, {"n": 1}, meta=[1, 2])
    with pytest.raises(jobtable.PayloadError, match=f"over the limit of {MAX_META_BYTES}"):
        kind.enqueue(store, {"n": 1}, meta={"big": "x" * MAX_META_BYTES})
    assert len(store.list_jobs()) == 1


def test_a_meta_model_holding_a_secret_is_refused_at_declaration() -> None:
    class Leaky(pydantic.BaseModel):
        token: pydantic.SecretStr

    with pytest.raises(TypeError, match="the meta model holds a secret type"):
        jobtable.Kind("ping", dict[str, int], int, meta=Leaky)


def test_enqueue_hooks_run_store_first_then_kind_in_order_and_may_add_tags_and_meta(
    store: jobtable.Store,
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int, tags=["k"])
    seen: list[str] = []

    @store.on_enqueue
    def first(job: jobtable.Enqueueing) -> None:
        seen.append(f"store-1 {job.kind} {job.payload} {job.tags}")
        job.meta["tenant"] = "acme"

    @kind.on_enqueue
    def third(job: jobtable.Enqueueing) -> None:
        seen.append(f"kind {job.meta}")
        job.tags.append("from-kind-hook")

    @store.on_enqueue
    def second(job: jobtable.Enqueueing) -> None:
        seen.append("store-2")

    job_id = kind.enqueue(store, {"n": 1}, tags=["e"])
    assert seen == ["store-1 ping {'n': 1} ['k', 'e']", "store-2", "kind {'tenant': 'acme'}"]
    record = store.inspect(job_id)
    assert (record.tags, record.meta) == (["k", "e", "from-kind-hook"], {"tenant": "acme"})
    assert [r.id for r in store.list_jobs(tag="from-kind-hook")] == [job_id]


def test_an_enqueue_hook_that_raises_refuses_the_whole_enqueue(
    store: jobtable.Store, job_tags: Callable[[], list[tuple[str, int]]]
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int)

    class Refused(Exception):
        pass

    @kind.on_enqueue
    def no_odd(job: jobtable.Enqueueing) -> None:
        if job.payload["n"] % 2:  # type: ignore[index]
            raise Refused("odd jobs are refused")

    with pytest.raises(Refused, match="odd jobs are refused"):
        kind.enqueue_many(store, [{"n": 2}, {"n": 3}])
    assert store.list_jobs() == []
    assert job_tags() == []


def test_a_hook_that_adds_a_bad_tag_or_meta_is_refused_naming_it(store: jobtable.Store) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int, meta=Tenant)
    store.on_enqueue(lambda job: job.tags.append("bad tag"))
    with pytest.raises(ValueError, match="tag 'bad tag' is not"):
        kind.enqueue(store, {"n": 1}, meta=Tenant(tenant="acme"))
    assert store.list_jobs() == []


def test_an_async_enqueue_hook_is_refused_at_registration(store: jobtable.Store) -> None:
    async def hook(job: jobtable.Enqueueing) -> None:
        pass

    with pytest.raises(TypeError, match="an enqueue hook must be a plain def"):
        store.on_enqueue(hook)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="the hook is not callable"):
        jobtable.Kind("ping", dict[str, int], int).on_enqueue(42)  # type: ignore[arg-type]


async def test_aenqueue_stores_tags_and_meta_as_enqueue_does(store: jobtable.Store) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int, tags=["a"])
    job_id = await kind.aenqueue(store, {"n": 1}, tags=["b"], meta={"x": 1})
    record = await store.ainspect(job_id)
    assert (record.tags, record.meta) == (["a", "b"], {"x": 1})
    assert [r.id for r in await store.alist_jobs(tag="b")] == [job_id]


def test_a_unique_enqueue_that_collides_stores_no_tag_entry(
    store: jobtable.Store, job_tags: Callable[[], list[tuple[str, int]]]
) -> None:
    kind = jobtable.Kind("ping", dict[str, int], int, unique=jobtable.Unique(fields=["n"]))
    first = kind.enqueue(store, {"n": 1}, tags=["u"])
    assert kind.enqueue(store, {"n": 1}, tags=["u", "v"]) == first
    assert job_tags() == [("u", store.inspect(first).seq)]
