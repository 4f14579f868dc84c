"""A Python type as the generated code spells it, and the plain ones."""

import dataclasses


@dataclasses.dataclass(frozen=True, slots=True)
class PyType:
    """A Python type as the generated code spells it.

    ``decode`` is a format string that turns the driver's value ``{}`` into
    the annotated type, for drivers that return another type (SQLite returns
    booleans as integers).
    ``encode`` likewise turns a parameter into what the driver takes.
    ``decode_nullable`` and ``encode_nullable`` do the same for a nullable
    value; they call a helper of ``HELPERS`` instead of an inline
    conditional, which ruff format would split over lines once a name is
    long (the module defines the helpers its code calls). ``aliases`` are the
    type aliases of ``ALIASES`` that the models module defines for the
    annotation. ``note`` says, on an ``object``, why the value has no type and
    how to give it one; the generated code carries it as a comment.
    """

    annotation: str
    decode: str = "{}"
    encode: str = "{}"
    decode_nullable: str = "{}"
    encode_nullable: str = "{}"
    aliases: tuple[str, ...] = ()
    # Set on an untyped value (``object``): what sqlc could not type and the fix.
    note: str = ""


# The types that need no conversion either way.
INT = PyType("int")
STR = PyType("str")
FLOAT = PyType("float")
BYTES = PyType("bytes")
