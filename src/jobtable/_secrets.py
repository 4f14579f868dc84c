"""Secrets in payloads and results: the one place that encrypts, decrypts and masks them.

A ``SecretStr``, ``SecretBytes`` or ``Secret[T]`` of a payload or result is
stored as an envelope in its place in the JSON::

    {"$secret": "k1", "v": "<base64 of nonce, AES-GCM ciphertext and tag>"}

The plaintext is the secret value's own JSON text, so that decrypting puts
back exactly what pydantic validates. The key id is also the associated data:
an envelope cannot be moved under another key id. Every reader other than a
handler (``Job``, ``JobRecord``, the CLI, the dashboard, the testing
assertions) sees an envelope as pydantic's mask, ``"**********"``.

Keys are ``id:base64`` items separated by commas, the first encrypting new
values; the others only decrypt, so keys can be rotated.
"""

import base64
import binascii
import collections
import json
import os
import re
import secrets
from collections.abc import Callable, Sequence
from typing import Any

import pydantic
import pydantic_core

from jobtable._errors import SecretKeyError

ENV_VAR = "JOBTABLE_SECRET_KEYS"
"""The environment variable a store reads its secret keys from when none are given."""

MASK = "**********"
"""What every reader but the handler sees in place of a secret: pydantic's own mask."""

MARK = "$secret"
"""The key of an envelope naming its key id; no other object of a payload with secrets has it."""

_MARK_TEXT = '"$secret"'
_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,32}\Z")
_NONCE = 12
_SECRET_TYPES = (pydantic.SecretStr, pydantic.SecretBytes, pydantic.Secret)

HOW = (
    f"set {ENV_VAR}=ID:KEY (KEY: 32 random bytes in base64; "
    "`jobtable secrets new-key ID` prints one) or pass Store.open(..., secret_keys=...)"
)
"""How to configure a key, for the messages that say none is."""


def _aesgcm() -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError:
        raise ImportError(
            "secrets in payloads need the cryptography package: pip install 'jobtable[secrets]'"
        ) from None
    return AESGCM


def _aad(key_id: str) -> bytes:
    return b"jobtable secret:" + key_id.encode()


def new_key(key_id: str) -> str:
    """Returns a fresh key as configured: ``key_id:`` and 32 random bytes in base64."""
    if not isinstance(key_id, str) or not _KEY_ID.match(key_id):
        raise ValueError(f"secret key id {key_id!r}: want 1 to 32 of A-Z a-z 0-9 _ . -")
    return f"{key_id}:{base64.b64encode(secrets.token_bytes(32)).decode()}"


def _check_length(where: str, key_id: str, length: int, *, encrypts: bool) -> None:
    """Raises ValueError naming key_id when a key of length bytes may not serve as given."""
    if length == 32 or (not encrypts and length in (16, 24)):
        return
    if length in (16, 24):
        raise ValueError(
            f"{where}: secret key {key_id!r} is {length} bytes, and the first key, which "
            f"encrypts, must be 32: put a new key first (`jobtable secrets new-key ID` prints "
            f"one) and keep {key_id!r} after it to decrypt until `jobtable secrets rotate` "
            f"has moved its secrets"
        )
    raise ValueError(
        f"{where}: secret key {key_id!r} is {length} bytes; want 32 random bytes in base64 "
        f"(`jobtable secrets new-key {key_id}` prints one)"
    )


class SecretKeys:
    """The keys that encrypt the secrets of payloads and results: the first for new ones.

    Every key decrypts what was encrypted under its id, so a new key goes
    first and the old ones stay until ``Store.rotate_secrets`` has moved
    every stored secret to the new one. repr shows the ids only.
    """

    __slots__ = ("_ciphers", "current")

    def __init__(self, keys: Sequence[tuple[str, bytes]]) -> None:
        if not keys:
            raise ValueError("SecretKeys: want at least one key")
        aesgcm = _aesgcm()
        self._ciphers: dict[str, Any] = {}
        for key_id, key in keys:
            if key_id in self._ciphers:
                raise ValueError(f"secret key {key_id!r} is given twice")
            self._ciphers[key_id] = aesgcm(key)
        self.current: str = keys[0][0]
        """The id of the key that encrypts new secrets."""

    @classmethod
    def parse(cls, spec: str | Sequence[str], where: str) -> "SecretKeys | None":
        """Returns the keys of spec (``id:base64`` items, comma-separated or a list); None for none.

        Raises ValueError naming where and the key id (never the key) for an
        item that is not a valid key: the first, which encrypts, must be 32
        bytes (AES-256); a later one, which only decrypts, may be 16 or 24 so
        that what it sealed can be rotated to a 32-byte key.
        """
        items = spec.split(",") if isinstance(spec, str) else list(spec)
        keys: list[tuple[str, bytes]] = []
        for item in (i.strip() for i in items):
            if not item:
                continue
            key_id, sep, encoded = item.partition(":")
            key_id = key_id.strip()
            if not sep or not _KEY_ID.match(key_id):
                raise ValueError(
                    f"{where}: a secret key is not ID:KEY with an ID of 1 to 32 of "
                    "A-Z a-z 0-9 _ . - (the key is not shown)"
                )
            try:
                key = base64.b64decode(encoded.strip(), validate=True)
            except binascii.Error:
                raise ValueError(f"{where}: secret key {key_id!r} is not valid base64") from None
            _check_length(where, key_id, len(key), encrypts=not keys)
            keys.append((key_id, key))
        return cls(keys) if keys else None

    @property
    def ids(self) -> tuple[str, ...]:
        """The key ids, the current one first."""
        return tuple(self._ciphers)

    def seal(self, plaintext: bytes) -> dict[str, str]:
        """Returns the envelope of plaintext under the current key."""
        nonce = os.urandom(_NONCE)
        sealed = self._ciphers[self.current].encrypt(nonce, plaintext, _aad(self.current))
        return {MARK: self.current, "v": base64.b64encode(nonce + sealed).decode()}

    def unseal(self, envelope: dict[str, Any]) -> bytes:
        """Returns the plaintext of an envelope; SecretKeyError naming its key id when it cannot."""
        key_id = envelope[MARK]
        if not isinstance(key_id, str) or not _KEY_ID.match(key_id):
            raise SecretKeyError("a stored secret names no valid key id")
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise SecretKeyError(f'secret key "{key_id}" is not configured', key_id=key_id)
        try:
            raw = base64.b64decode(envelope["v"], validate=True)
            return bytes(cipher.decrypt(raw[:_NONCE], raw[_NONCE:], _aad(key_id)))
        except Exception:
            # InvalidTag, bad base64, a short value: the text quotes nothing of it.
            raise SecretKeyError(
                f'secret key "{key_id}" does not decrypt a stored secret '
                "(a different key under that id?)",
                key_id=key_id,
            ) from None

    def __repr__(self) -> str:
        return f"SecretKeys({', '.join(self._ciphers)})"


def keys_of(given: str | Sequence[str] | None) -> SecretKeys | None:
    """The keys a store is opened with: given, or when None the environment's ENV_VAR."""
    if given is None:
        return SecretKeys.parse(os.environ.get(ENV_VAR, ""), ENV_VAR)
    if not isinstance(given, str | Sequence):
        raise TypeError(f"secret_keys: want a str or a list of str, got {type(given).__name__}")
    return SecretKeys.parse(given, "secret_keys")


def mentions_secrets(schema: object, seen: set[int] | None = None) -> bool:
    """Tells whether a pydantic core schema holds a secret type anywhere."""
    if isinstance(schema, dict):
        seen = set() if seen is None else seen
        if id(schema) in seen:
            return False
        seen.add(id(schema))
        return any(mentions_secrets(v, seen) for v in schema.values())
    if isinstance(schema, list | tuple):
        return any(mentions_secrets(v, seen) for v in schema)
    if isinstance(schema, type):
        return issubclass(schema, _SECRET_TYPES)
    # Secret[T]'s schema names no class: only its serializer tells.
    return getattr(schema, "__module__", None) == "pydantic.types" and getattr(
        schema, "__name__", ""
    ).startswith("_serialize_secret")


class NoKey(Exception):
    """A value holds secrets but no key is configured."""


class Misplaced(Exception):
    """A secret's place in the JSON cannot be found, or an object has the key MARK."""


def seal_all(
    python: object, data: bytes, keys: SecretKeys | None, *, masked: bool = False
) -> tuple[bytes, bytes]:
    """Returns data, a value's JSON, with each secret of python, its python dump, sealed.

    And the JSON with each secret in clear, which is what its reader will
    validate: for the caller to check, never to store. pydantic dumps a
    secret as its mask in JSON and as itself in python, in the same place:
    the two dumps are walked side by side. With masked, the secrets stay
    masked instead of sealed. Raises NoKey when python holds a secret and
    keys is None (unless masked), and Misplaced when a secret is not where
    its mask is.
    """

    def seal(plaintext: bytes, mask: Any) -> Any:
        if masked:
            return mask
        if keys is None:
            raise NoKey
        return keys.seal(plaintext)

    sealed, clear, found = _seal(python, json.loads(data), seal)
    if not found:
        return data, data
    return pydantic_core.to_json(sealed), pydantic_core.to_json(clear)


def _seal(python: object, tree: Any, seal: Callable[[bytes, Any], Any]) -> tuple[Any, Any, bool]:
    """tree, the JSON of python, with its secrets sealed; with them in clear; whether it had any."""
    if isinstance(python, _SECRET_TYPES):
        if not isinstance(tree, str):
            raise Misplaced("a secret is not dumped as its mask")
        plaintext = pydantic_core.to_json(python.get_secret_value())
        return seal(plaintext, tree), json.loads(plaintext), True
    if isinstance(python, dict):
        if not isinstance(tree, dict) or len(tree) != len(python):
            raise Misplaced("an object dumps with other keys in JSON")
        if MARK in tree:
            raise Misplaced(f"an object has the key {MARK!r}, which marks a stored secret")
        if any(_holds_secret(key) for key in python):
            raise Misplaced("a secret is an object's key, which is stored in clear")
        sealed, clear, found = {}, {}, False
        # Both dumps keep the object's order; only the keys' types may differ.
        for value, name in zip(python.values(), tree, strict=True):
            sealed[name], clear[name], had = _seal(value, tree[name], seal)
            found |= had
        return sealed, clear, found
    if isinstance(python, list | tuple | collections.deque):
        if not isinstance(tree, list) or len(tree) != len(python):
            raise Misplaced("a list dumps with other items in JSON")
        parts = [_seal(value, item, seal) for value, item in zip(python, tree, strict=True)]
        return [p[0] for p in parts], [p[1] for p in parts], any(p[2] for p in parts)
    if _holds_secret(python):
        raise Misplaced("a set holds a secret, whose place in JSON is not kept")
    return tree, tree, False


def _holds_secret(python: object) -> bool:
    """Tells whether a python dump holds a secret anywhere, keys and set members included."""
    if isinstance(python, _SECRET_TYPES):
        return True
    if isinstance(python, dict):
        return any(_holds_secret(k) or _holds_secret(v) for k, v in python.items())
    if isinstance(python, list | tuple | set | frozenset | collections.deque):
        return any(_holds_secret(v) for v in python)
    return False


def _is_envelope(value: object) -> bool:
    return isinstance(value, dict) and len(value) == 2 and MARK in value and "v" in value


def _map_envelopes(tree: Any, change: Callable[[dict[str, Any]], Any]) -> Any:
    """tree with change applied to every envelope in it (a new tree where one was)."""
    if _is_envelope(tree):
        return change(tree)
    if isinstance(tree, dict):
        return {k: _map_envelopes(v, change) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_map_envelopes(v, change) for v in tree]
    return tree


def open_all(text: str, keys: SecretKeys | None) -> str:
    """Returns stored JSON text with every envelope replaced by its secret's JSON.

    Raises SecretKeyError naming the key id of the first one it cannot
    decrypt (every key when keys is None).
    """
    if _MARK_TEXT not in text:
        return text

    def opened(envelope: dict[str, Any]) -> Any:
        if keys is None:
            key_id = envelope[MARK]
            if isinstance(key_id, str) and _KEY_ID.match(key_id):
                raise SecretKeyError(f'secret key "{key_id}" is not configured', key_id=key_id)
            raise SecretKeyError("a stored secret names no valid key id")
        return json.loads(keys.unseal(envelope))

    return pydantic_core.to_json(_map_envelopes(json.loads(text), opened)).decode()


def masked(value: Any, text: str) -> Any:
    """value, the JSON data of stored text, with every envelope shown as MASK."""
    if _MARK_TEXT not in text:
        return value
    return _map_envelopes(value, lambda envelope: MASK)


def masked_text(text: str) -> str:
    """Stored JSON text with every envelope shown as MASK: as pydantic dumps the value."""
    if _MARK_TEXT not in text:
        return text
    return pydantic_core.to_json(_map_envelopes(json.loads(text), lambda e: MASK)).decode()


def reseal(text: str, keys: SecretKeys) -> str | None:
    """Stored JSON text with every envelope under an old key sealed under the current one.

    None when every envelope is under the current key already. Raises
    SecretKeyError as open_all does.
    """
    if _MARK_TEXT not in text:
        return None
    changed = False

    def moved(envelope: dict[str, Any]) -> Any:
        nonlocal changed
        if envelope[MARK] == keys.current:
            return envelope
        changed = True
        return keys.seal(keys.unseal(envelope))

    tree = _map_envelopes(json.loads(text), moved)
    return pydantic_core.to_json(tree).decode() if changed else None
