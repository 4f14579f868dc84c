"""How a kind's payloads and results become stored JSON and back."""

import json
import math
import re
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

import pydantic
import pydantic_core

from jobtable._errors import PayloadError, ResultError, SecretKeyError, StepError
from jobtable._secrets import (
    HOW,
    Misplaced,
    NoKey,
    SecretKeys,
    mentions_secrets,
    open_all,
    seal_all,
)
from jobtable._typeddict import usable_by_pydantic

P = TypeVar("P")
R = TypeVar("R")
T = TypeVar("T")


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


def _non_finite(value: object, path: str = "") -> str | None:
    """Where value, as pydantic dumps it in python mode, holds a NaN or an infinity, if it does.

    The place is ``field 'a.b[2]'``, or ``the value`` itself; None when there is none.
    """
    if isinstance(value, float):
        return None if math.isfinite(value) else (f"field {path!r}" if path else "the value")
    if isinstance(value, dict):
        items: Iterable[tuple[str, object]] = (
            (f"{path}.{k}" if path else str(k), v) for k, v in value.items()
        )
    elif isinstance(value, list | tuple):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    elif isinstance(value, set | frozenset):
        items = ((f"{path}[]", v) for v in value)
    else:
        return None
    for where, item in items:
        if found := _non_finite(item, where):
            return found
    return None


class _Invalid(Exception):
    """A value that is not valid data of its type; the message says why, quoting no data."""


class PayloadMismatch(ValueError):
    """A stored payload that no longer validates as its kind's payload type; may quote it."""


class ResultTooLarge(ResultError):
    """A result over the runner's max_result_bytes; its message quotes no data, so it is stored."""


_FIELDS_SCHEMAS = frozenset({"model-fields", "typed-dict", "dataclass-args"})
"""The pydantic core schemas that list an object type's fields."""


class Codec(Generic[P, R]):
    """Turns a kind's payloads and results into stored JSON and back.

    Only data of the declared types is ever encoded, and payloads and results
    are checked alike: the value must be of the type, dump to JSON that
    validates back as the type, hold no NaN or infinity (JSON has none, and
    pydantic would store null for them), and fit the size limit.

    A type that holds secrets (``SecretStr``, ``SecretBytes``, ``Secret[T]``,
    at any depth) has each secret encrypted under keys, the store's secret
    keys (see ``jobtable._secrets``), and decrypted again for its handler;
    with keys None such a value is refused, never stored masked.
    """

    def __init__(self, kind: str, payload_type: type[P], result_type: type[R]) -> None:
        self.kind = kind
        self.payload_type = payload_type
        self.result_type = result_type
        self._payload = pydantic.TypeAdapter[P](usable_by_pydantic(payload_type))
        self._result = pydantic.TypeAdapter[R](usable_by_pydantic(result_type))
        self._payload_secrets = mentions_secrets(self._payload.core_schema)
        self._result_secrets = mentions_secrets(self._result.core_schema)

    @staticmethod
    def _encode(
        adapter: "pydantic.TypeAdapter[T]",
        value: T,
        keys: SecretKeys | None,
        secrets: bool,
        masked: bool = False,
    ) -> bytes:
        """Returns value as JSON; raises _Invalid, chained to the cause, when it is not valid.

        With secrets (the type has some), each secret is sealed under keys,
        or left masked with masked; raises NoKey when there is one, keys is
        None and not masked. What is checked is the JSON with the secrets in
        clear, as the reader will validate it.
        """
        try:
            # The adapter's own serializer and validator, called directly: the
            # adapter's methods take the same arguments and cost as much again.
            data = adapter.serializer.to_json(value, by_alias=True, warnings="error")
            clear = data
            if secrets:
                python = adapter.serializer.to_python(value, by_alias=True)
                data, clear = seal_all(python, data, keys, masked=masked)
        except pydantic_core.PydanticSerializationError as err:
            raise _Invalid(_serializer_problem(str(err))) from err
        except Misplaced as err:
            raise _Invalid(f"its secrets cannot be stored: {err}") from err
        # pydantic dumps NaN and infinities as null, which a type that allows
        # None would read back as None (a changed value), and one that does
        # not would refuse as "input_value=None": either way, say what it was.
        if b"null" in clear:
            where = _non_finite(adapter.dump_python(value, mode="python", by_alias=True))
            if where:
                raise _Invalid(f"{where} is a float NaN or infinity, which cannot be stored")
        try:
            adapter.validator.validate_json(clear)
        except pydantic.ValidationError as err:
            raise _Invalid(str(err)) from err
        return data

    def payload_fields(self) -> frozenset[str] | None:
        """The top-level keys a stored payload may have, as stored (aliases), if the type says.

        None when the type does not fix them: a dict, a model that allows
        extra fields, a type that is not an object, or one whose JSON schema
        pydantic cannot make.
        """
        try:
            schema = self._payload.json_schema(by_alias=True, mode="serialization")
        except Exception:  # a type without a JSON schema fixes no fields
            return None
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            schema = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        properties = schema.get("properties")
        if schema.get("type") != "object" or not isinstance(properties, dict):
            return None
        if schema.get("additionalProperties", False) is not False:
            return None
        return frozenset(properties)

    def check_field(self, where: str, what: str, field: str) -> None:
        """Raises ValueError naming where when field is not one the payload type fixes.

        what names the declaration that uses it (``unique``, ``partition``).
        A type that fixes no fields (see ``payload_fields``) accepts any.
        """
        known = self.payload_fields()
        if known is None or field in known:
            return
        raise ValueError(
            f"{where}: {what} field {field!r} is not a field of "
            f"{getattr(self.payload_type, '__name__', self.payload_type)} "
            f"(its fields: {', '.join(sorted(known)) or 'none'})"
        )

    def check_not_secret(self, where: str, what: str, field: str) -> None:
        """Raises ValueError naming where when field of the payload type holds a secret.

        what names the declaration that keys jobs by it (``partition``,
        ``sequence``): a key is stored in clear and shown to every reader,
        and a secret's stored form is encrypted anew at each enqueue, so it
        could key nothing. A type whose fields cannot be read accepts any.
        """
        schema: Any = self._payload.core_schema
        for _ in range(8):  # down the wrappers (model, definitions) to the fields
            if not isinstance(schema, dict) or schema.get("type") in _FIELDS_SCHEMAS:
                break
            schema = schema.get("schema")
        if not isinstance(schema, dict) or schema.get("type") not in _FIELDS_SCHEMAS:
            return
        fields = schema["fields"]
        named = fields.items() if isinstance(fields, dict) else ((f["name"], f) for f in fields)
        for name, spec in named:
            if field in (name, spec.get("serialization_alias")) and mentions_secrets(spec):
                raise ValueError(
                    f"{where}: {what} field {field!r} is a secret, which a key would show in "
                    f"clear (and which is encrypted anew at each enqueue, so it keys nothing); "
                    f"key the jobs by another field, or by a function that returns no secret"
                )

    def shown_payload(self, payload: P) -> str:
        """Returns payload's JSON as every reader but its handler sees it: secrets masked.

        Raises PayloadError when payload is not a P. Never stored.
        """
        try:
            encoded = self._encode(self._payload, payload, None, self._payload_secrets, True)
        except _Invalid as err:
            raise PayloadError(
                f"{self.kind!r}: payload is not a valid {_name(self.payload_type)}: {err}"
            ) from err.__cause__
        return encoded.decode()

    def encode_payload(self, payload: P, limit: int, keys: SecretKeys | None) -> str:
        """Returns payload as stored JSON, its secrets encrypted under keys.

        Raises PayloadError when it is not a P, too large, or holds a secret
        while keys is None (the message says how to configure a key).
        """
        try:
            data = self._encode(self._payload, payload, keys, self._payload_secrets)
        except NoKey:
            raise PayloadError(
                f"enqueue {self.kind!r}: the payload holds secrets (SecretStr, SecretBytes), "
                f"which are stored encrypted, and no secret key is configured: {HOW}"
            ) from None
        except _Invalid as err:
            raise PayloadError(
                f"enqueue {self.kind!r}: payload is not a valid {_name(self.payload_type)}: {err}"
            ) from err.__cause__
        if len(data) > limit:
            raise PayloadError(
                f"enqueue {self.kind!r}: payload is {len(data)} bytes, over the limit of {limit}"
            )
        return data.decode()

    def decode_payload(self, text: str, keys: SecretKeys | None) -> P:
        """Returns the stored payload as a P, its secrets decrypted with keys.

        Raises PayloadMismatch when it is JSON that does not validate as P
        (the type changed since it was stored), and SecretKeyError naming the
        key id of a secret keys cannot decrypt. A field the type does not know
        is a ValueError, not silently dropped: the payload was written by other
        code than this handler expects.
        """
        if self._payload_secrets:
            text = open_all(text, keys)
        try:
            value = self._payload.validate_json(text)
        except pydantic.ValidationError as err:
            if any(e["type"] == "json_invalid" for e in err.errors()):
                raise  # not JSON at all: the row is damaged, not of an older type
            raise PayloadMismatch(
                f"payload of {self.kind!r} is not a valid {_name(self.payload_type)}: {err}"
            ) from err
        if self._payload.dump_json(value, by_alias=True) == text.encode():
            # What encode_payload wrote comes back the same: no field is unknown.
            return value
        unknown = _unknown_field(
            json.loads(text), self._payload.dump_python(value, mode="json", by_alias=True), ""
        )
        if unknown:
            raise ValueError(f"payload of {self.kind!r} has an unknown field {unknown!r}")
        return value

    def encode_result(self, result: R, limit: int, keys: SecretKeys | None) -> str:
        """Returns result as JSON, as strictly checked as a payload, its secrets encrypted.

        Raises ResultError when it is not a valid R (its message may quote the
        value: log it, never store it), ResultTooLarge, whose message quotes
        nothing, when its JSON is over limit bytes, and SecretKeyError, which
        quotes nothing either, when it holds a secret and keys is None.
        """
        try:
            data = self._encode(self._result, result, keys, self._result_secrets)
        except NoKey:
            raise SecretKeyError(
                "the result holds secrets, which are stored encrypted, "
                "and no secret key is configured"
            ) from None
        except _Invalid as err:
            raise ResultError(
                f"job kind {self.kind!r}: result is not a valid {_name(self.result_type)}: {err}"
            ) from err.__cause__
        if len(data) > limit:
            raise ResultTooLarge(
                f"result is {len(data)} bytes, over the limit of {limit} (max_result_bytes)"
            )
        return data.decode()

    def decode_result(self, text: str, job_id: str, keys: SecretKeys | None) -> R:
        """Returns a stored result as an R, its secrets decrypted with keys.

        Raises ResultError naming the job and the kind when it no longer
        validates as R (the type changed since it was stored), and
        SecretKeyError naming the key id of a secret keys cannot decrypt.
        """
        if self._result_secrets:
            text = open_all(text, keys)
        try:
            return self._result.validate_json(text)
        except pydantic.ValidationError as err:
            raise ResultError(
                f"job {job_id!r} of kind {self.kind!r}: its stored result is not a valid "
                f"{_name(self.result_type)}: {err}"
            ) from err


class StepCodec(Generic[T]):
    """Turns a step's outputs into stored JSON and back, checked as strictly as a result.

    ``JobContext.step`` records a step's output with it; secrets follow the
    rules of results (encrypted under the store's secret keys, refused
    without one).
    """

    def __init__(self, output_type: object) -> None:
        self.output_type = output_type
        self._adapter = pydantic.TypeAdapter[T](usable_by_pydantic(output_type))
        self._secrets = mentions_secrets(self._adapter.core_schema)

    def encode(self, step: str, output: T, limit: int, keys: SecretKeys | None) -> str:
        """Returns output as JSON, its secrets encrypted under keys.

        Raises StepError naming step when output is not valid data of the
        type (its message may quote the value: log it, never store it) or
        its JSON is over limit bytes, and SecretKeyError when it holds a
        secret and keys is None.
        """
        try:
            data = Codec._encode(self._adapter, output, keys, self._secrets)
        except NoKey:
            raise SecretKeyError(
                f"step {step!r}: the output holds secrets, which are stored encrypted, "
                "and no secret key is configured"
            ) from None
        except _Invalid as err:
            raise StepError(
                f"step {step!r}: the output is not a valid {_name(self.output_type)}: {err}"
            ) from err.__cause__
        if len(data) > limit:
            raise StepError(
                f"step {step!r}: the output is {len(data)} bytes, "
                f"over the limit of {limit} (max_result_bytes)"
            )
        return data.decode()

    def decode(self, step: str, job_id: str, text: str, keys: SecretKeys | None) -> T:
        """Returns a recorded output, its secrets decrypted with keys.

        Raises StepError naming the step and the job when it no longer
        validates as the type (the step's type changed since it was
        recorded), and SecretKeyError for a secret keys cannot decrypt.
        """
        if self._secrets:
            text = open_all(text, keys)
        try:
            return self._adapter.validate_json(text)
        except pydantic.ValidationError as err:
            raise StepError(
                f"job {job_id!r}: the recorded output of step {step!r} is not a valid "
                f"{_name(self.output_type)}: {err}"
            ) from err


_UNEXPECTED = re.compile(
    r"Expected `(?P<want>[^`]+)`[^\[]*\[(?:field_name='(?P<field>[^']*)', )?"
    r".*input_type=(?P<got>\w+)\]"
)


def _serializer_problem(message: str) -> str:
    """Says in a line what pydantic's serializer warnings say: what was given where.

    The warnings quote the value; the line does not.
    """
    found = _UNEXPECTED.search(message)
    if found is None:
        return message
    want, field, got = found["want"], found["field"], found["got"]
    if field:
        return f"field {field!r} is of type {got}, want {want}"
    hint = f"; a dict is not converted: build the {want} first" if got == "dict" else ""
    return f"got a value of type {got}, want {want}{hint}"


def _name(t: object) -> str:
    return str(getattr(t, "__name__", t))
