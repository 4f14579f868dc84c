"""The workflow page's pictures: its graph with edges, and its jobs' timeline, as SVG geometry.

Both are computed here as plain numbers and drawn by the template as inline
SVG (no script, no external asset), one page of jobs at a time: a workflow
of 10,000 jobs is paged (``PAGE`` jobs a page), never drawn whole. In the
graph, each row is a layer (a job is one below its deepest dependency) and
an edge runs from a dependency to its dependent when both are on the page;
a dependency on another page is named in the job's list entry instead. The
timeline has a row per job: queued from its enqueue to its last start, then
running to its end (or to now, for one not ended).
"""

import dataclasses
import datetime
from collections.abc import Mapping, Sequence

from jobtable._operator.workflows import WorkflowNode

PAGE = 200
"""The jobs a workflow page shows, in enqueue order."""

BOX_W, BOX_H, GAP_X, GAP_Y = 130, 30, 20, 34
ROW_H, LABEL_W, BAR_W = 18, 170, 520


@dataclasses.dataclass(frozen=True, slots=True)
class Box:
    """A job's box in the graph: its top-left corner, number, kind, status and id."""

    x: int
    y: int
    number: int
    kind: str
    status: str
    id: str


@dataclasses.dataclass(frozen=True, slots=True)
class Edge:
    """A line from a dependency's box (bottom middle) to its dependent's (top middle)."""

    x1: int
    y1: int
    x2: int
    y2: int
    status: str


@dataclasses.dataclass(frozen=True, slots=True)
class Drawing:
    """The graph of one page: its size, boxes and edges."""

    width: int
    height: int
    boxes: list[Box]
    edges: list[Edge]


def drawing(layers: Sequence[Sequence[WorkflowNode]], number: Mapping[str, int]) -> Drawing:
    """The graph of the page's jobs, laid out by layers (the page's, in depth order)."""
    place: dict[str, Box] = {}
    for row, layer in enumerate(layers):
        for column, node in enumerate(layer):
            x, y = GAP_X + column * (BOX_W + GAP_X), GAP_Y // 2 + row * (BOX_H + GAP_Y)
            place[node.id] = Box(x, y, number[node.id], node.kind, node.status, node.id)
    edges = [
        Edge(
            dep.x + BOX_W // 2,
            dep.y + BOX_H,
            box.x + BOX_W // 2,
            box.y,
            dep.status,
        )
        for layer in layers
        for node in layer
        for box in (place[node.id],)
        for dep in (place[d] for d in node.dependencies if d in place)
    ]
    widest = max((len(layer) for layer in layers), default=0)
    return Drawing(
        width=GAP_X + widest * (BOX_W + GAP_X),
        height=GAP_Y + len(layers) * (BOX_H + GAP_Y),
        boxes=list(place.values()),
        edges=edges,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class Bar:
    """A job's timeline row: its number, kind, times, and the x and width of each span."""

    y: int
    number: int
    id: str
    kind: str
    status: str
    queued_at: datetime.datetime | None
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    wait: tuple[float, float]
    run: tuple[float, float] | None


@dataclasses.dataclass(frozen=True, slots=True)
class Timeline:
    """The timeline of one page: its size, its span's ends and a bar per job."""

    width: int
    height: int
    start: datetime.datetime | None
    end: datetime.datetime | None
    bars: list[Bar]


def timeline(
    jobs: Sequence[WorkflowNode], number: Mapping[str, int], now: datetime.datetime
) -> Timeline:
    """The page's jobs on one time axis, from the first enqueue to the last end (or now)."""
    times = [t for n in jobs for t in (n.created_at, n.started_at, n.finished_at) if t is not None]
    if not times:
        return Timeline(LABEL_W + BAR_W, 0, None, None, [])
    start = min(times)
    end = max(max(times), now if any(n.finished_at is None for n in jobs) else start)
    span = max((end - start).total_seconds(), 1e-6)

    def x(moment: datetime.datetime | None) -> float:
        at = end if moment is None else moment
        return LABEL_W + BAR_W * (at - start).total_seconds() / span

    bars = []
    for row, node in enumerate(jobs):
        queued = x(node.created_at or start)
        began = x(node.started_at if node.started_at is not None else node.finished_at)
        wait = (queued, max(began - queued, 1.0))
        run = None
        if node.started_at is not None:
            run = (began, max(x(node.finished_at) - began, 1.0))
        bars.append(
            Bar(
                row * ROW_H,
                number[node.id],
                node.id,
                node.kind,
                node.status,
                node.created_at,
                node.started_at,
                node.finished_at,
                wait,
                run,
            )
        )
    return Timeline(LABEL_W + BAR_W + 10, len(jobs) * ROW_H, start, end, bars)
