"""How a kind's payloads and results become stored JSON and back."""

import json
from typing import Generic, TypeVar

import pydantic
import pydantic_core

from ._errors import PayloadError

P = TypeVar("P")
R = TypeVar("R")


def _unknown_field(stored: object, known: object, path: str) -> str | None:
    """Returns the path of the first key of stored that known lacks, if any."""
    if isinstance(stored, dict) and isinstance(known, dict):
        for key, value in stored.items():
            if key not in known:
                return f"{path}.{key}" if path else str(key)
            found = _unknown_field(value, known[key], f"{path}.{key}" if path else str(key))
            if found:
                return found
    elif isinstance(stored, list) and isinstance(known, list):
        for i, (a, b) in enumerate(zip(stored, known, strict=False)):
            found = _unknown_field(a, b, f"{path}[{i}]")
            if found:
                return found
    return None


class Codec(Generic[P, R]):
    """Turns a kind's payloads and results into stored JSON and back.

    Only data of the declared types is ever encoded, so nothing but typed
    data reaches the table.
    """

    def __init__(self, kind: str, payload_type: type[P], result_type: type[R]) -> None:
        self.kind = kind
        self.payload_type = payload_type
        self.result_type = result_type
        self._payload = pydantic.TypeAdapter[P](payload_type)
        self._result = pydantic.TypeAdapter[R](result_type)

    def encode_payload(self, payload: P, limit: int) -> str:
        """Returns payload as JSON; raises PayloadError when it is not a P or too large."""
        try:
            data = self._payload.dump_json(payload, by_alias=True, warnings="error")
            self._payload.validate_json(data)
        except (pydantic.ValidationError, pydantic_core.PydanticSerializationError) as err:
            raise PayloadError(
                f"enqueue {self.kind!r}: payload is not a valid "
                f"{getattr(self.payload_type, '__name__', self.payload_type)}: {err}"
            ) from err
        if len(data) > limit:
            raise PayloadError(
                f"enqueue {self.kind!r}: payload is {len(data)} bytes, over the limit of {limit}"
            )
        return data.decode()

    def decode_payload(self, text: str) -> P:
        """Returns the stored payload as a P.

        A field the type does not know is an error, not silently dropped: the
        payload was written by other code than this handler expects.
        """
        value = self._payload.validate_json(text)
        if self._payload.dump_json(value, by_alias=True) == text.encode():
            # What encode_payload wrote comes back the same: no field is unknown.
            return value
        unknown = _unknown_field(
            json.loads(text), self._payload.dump_python(value, mode="json", by_alias=True), ""
        )
        if unknown:
            raise ValueError(f"payload of {self.kind!r} has an unknown field {unknown!r}")
        return value

    def encode_result(self, result: R) -> str:
        """Returns result as JSON; raises when it is not an R."""
        return self._result.dump_json(result, warnings="error").decode()

    def decode_result(self, text: str) -> R:
        """Returns a stored result as an R."""
        return self._result.validate_json(text)
