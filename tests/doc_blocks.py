"""The python examples of the README and the documentation site, as the tests read them.

A block is a fenced ```python block of README.md or of a page under docs/.
Its first line may name a file of the documents' example project
(``# tasks.py`` or ``# tasks.py: why``): the other examples import it by
that name. The line ``<!-- run -->`` just before a block marks it a complete
program. CONTRIBUTING.md states the rule for writers; test_doc_examples.py
holds the documents to it.
"""

import pathlib
import re
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
"""Every document whose examples are tested: the README and each page of the site."""

_BLOCK = re.compile(r"^(?P<marker><!-- run -->\n)?```python\n(?P<text>.*?)^```$", re.M | re.S)
_FILE_NAME = re.compile(r"^# (?P<name>[a-z_][a-z0-9_]*\.py)(?::.*)?$")


@dataclass(frozen=True)
class Block:
    """One ```python block: where it is, its text, and what the document says it is."""

    document: pathlib.Path
    line: int
    text: str
    runnable: bool

    @property
    def where(self) -> str:
        """The block as a reader finds it: document:line."""
        return f"{self.document.relative_to(ROOT)}:{self.line}"

    @property
    def file_name(self) -> str | None:
        """The file of the example project the block is (``tasks.py``), or None."""
        match = _FILE_NAME.match(self.text.split("\n", 1)[0])
        return match["name"] if match else None


def blocks() -> list[Block]:
    """Every python block of every document, in document order."""
    found = []
    for document in DOCUMENTS:
        source = document.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(source):
            line = source.count("\n", 0, match.start("text")) + 1
            found.append(Block(document, line, match["text"], match["marker"] is not None))
    return found


def block_holding(text: str) -> Block:
    """The first block, README first, whose text holds text."""
    return next(block for block in blocks() if text in block.text)
