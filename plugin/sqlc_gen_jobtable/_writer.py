"""An indenting writer: renderers say what to write, it keeps the indentation.

Renderers never count spaces: they write lines at the writer's current depth
and open a nested depth with ``indent()`` or ``block()``. The one question of
width they ask is ``fits``, which decides whether a call stays on one line.
"""

import contextlib
from collections.abc import Iterator

# The longest line the generated code keeps joined. Up to ruff's default of
# 88 a call stays on one line; past it, the call is exploded with a trailing
# comma, which ruff format keeps at every line length: so the output is
# formatted for any line length from 88 up.
LINE_LENGTH = 88
_STEP = "    "


class Writer:
    """Collects lines of code, each indented to the depth current when written."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._depth = 0

    @property
    def margin(self) -> str:
        """The spaces that start a line written now."""
        return _STEP * self._depth

    def line(self, text: str = "") -> None:
        """Writes one line at the current depth; an empty line gets no spaces."""
        self._lines.append(self.margin + text if text else "")

    def lines(self, texts: list[str]) -> None:
        """Writes each of texts as a line at the current depth."""
        for text in texts:
            self.line(text)

    def child(self) -> "Writer":
        """Returns an empty writer at this one's depth, for lines to measure before writing."""
        child = Writer()
        child._depth = self._depth
        return child

    def extend(self, lines: list[str]) -> None:
        """Writes lines already indented, as a child writer returned them."""
        self._lines.extend(lines)

    def raw(self, text: str) -> None:
        """Writes text as it is, without the margin (a held token that spans lines)."""
        self._lines.append(text)

    def fits(self, text: str) -> bool:
        """Tells whether text, written at the current depth, keeps within LINE_LENGTH."""
        return len(self.margin + text) <= LINE_LENGTH

    @contextlib.contextmanager
    def indent(self) -> Iterator[None]:
        """Writes the lines of the with-block one level deeper."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    @contextlib.contextmanager
    def block(self, opener: str, closer: str = "") -> Iterator[None]:
        """Writes opener, the with-block one level deeper, then closer if any."""
        self.line(opener)
        with self.indent():
            yield
        if closer:
            self.line(closer)

    def result(self) -> list[str]:
        """Returns the lines written so far."""
        return list(self._lines)
