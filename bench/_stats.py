"""Figures from repeated runs, their median and spread, and the tables that print them."""

import dataclasses
import math
import os
import platform
import statistics
import sys
from collections.abc import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    """Returns the q-th percentile (0..100) of samples, interpolating between ranks."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclasses.dataclass
class Figure:
    """One measured quantity over repeated runs, in a unit, where higher or lower is better."""

    values: list[float]
    unit: str

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else math.nan

    def spread(self) -> str:
        """The runs' range as a percentage of the median, or '' for a single run."""
        if len(self.values) < 2 or not self.median:
            return ""
        return f"±{(max(self.values) - min(self.values)) / 2 / abs(self.median) * 100:.0f}%"


def fmt(value: float, unit: str) -> str:
    """Formats value in unit for a table cell."""
    if math.isnan(value):
        return "-"
    if unit == "ms":
        return f"{value:.2f} ms" if value < 10 else f"{value:.0f} ms"
    if unit == "µs":
        return f"{value:.1f} µs" if value < 100 else f"{value:,.0f} µs"
    if unit == "% CPU":
        return f"{value:.2f} % CPU"
    if unit == "MiB":
        return f"{value:.0f} MiB"
    return f"{value:,.0f} {unit}"


def cell(figure: Figure | None) -> str:
    """A table cell: the median with its spread, or '-'."""
    if figure is None or not figure.values:
        return "-"
    spread = figure.spread()
    return fmt(figure.median, figure.unit) + (f" ({spread})" if spread else "")


def ratio(ours: Figure | None, raw: Figure | None) -> str:
    """ours / raw of the medians: a percentage for rates, a factor for costs."""
    if ours is None or raw is None or not ours.values or not raw.values or not raw.median:
        return "-"
    value = ours.median / raw.median
    if ours.unit.endswith("/s"):
        return f"{value * 100:.0f}%"
    return f"{value:.2f}x"


@dataclasses.dataclass
class Table:
    """A titled table of text cells."""

    title: str
    header: list[str]
    rows: list[list[str]] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    def add(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def render(self, markdown: bool) -> str:
        if markdown:
            lines = [f"#### {self.title}", ""]
            lines.append("| " + " | ".join(self.header) + " |")
            lines.append(
                "|" + "|".join("---" if i == 0 else "--:" for i in range(len(self.header))) + "|"
            )
            lines += ["| " + " | ".join(row) + " |" for row in self.rows]
            if self.notes:
                lines.append("")
                lines += [f"- {note}" for note in self.notes]
            return "\n".join(lines) + "\n"
        widths = [
            max(len(row[i]) for row in [self.header, *self.rows]) for i in range(len(self.header))
        ]

        def line(row: list[str]) -> str:
            return "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )

        out = [self.title, "=" * len(self.title), line(self.header)]
        out.append("  ".join("-" * w for w in widths))
        out += [line(row) for row in self.rows]
        out += [f"  * {note}" for note in self.notes]
        return "\n".join(out) + "\n"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as file:
            for text in file:
                if text.startswith("model name"):
                    return text.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_details() -> list[tuple[str, str]]:
    """CPU, cores, OS and Python; the engines add their own versions."""
    return [
        ("CPU", cpu_model()),
        ("cores", str(os.cpu_count())),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("Python", sys.version.split()[0]),
    ]
