"""API keys: which tenant a request acts for.

Keys come from ``LOOPWRIGHT_SERVE_KEYS`` (``key=tenant`` pairs separated by commas or
newlines) or from a file (a JSON object ``{"key": "tenant"}``, or one ``key tenant`` /
``key=tenant`` pair a line; ``#`` starts a comment). A request presents its key as
``Authorization: Bearer KEY`` or ``X-API-Key: KEY``. Keys are kept only as SHA-256
digests and looked up by digest, so the comparison does not leak a key's prefix through
timing.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from loopwright.core.errors import UserError

KEYS_ENV = "LOOPWRIGHT_SERVE_KEYS"


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class ApiKeys:
    """Key digest -> tenant."""

    tenants: Mapping[bytes, str]

    @classmethod
    def from_mapping(cls, keys: Mapping[str, str]) -> ApiKeys:
        out: dict[bytes, str] = {}
        for key, tenant in keys.items():
            key, tenant = key.strip(), tenant.strip()
            if len(key) < 8:
                raise UserError(
                    f"API key for tenant {tenant!r} is {len(key)} characters long; use keys "
                    "of at least 8 characters (e.g. `python -c 'import secrets; "
                    "print(secrets.token_urlsafe(24))'`)"
                )
            if not tenant:
                raise UserError("an API key has an empty tenant; write key=tenant")
            out[_digest(key)] = tenant
        if not out:
            raise UserError(
                f"no API keys: set {KEYS_ENV}='KEY=TENANT,...' or pass --keys-file FILE"
            )
        return cls(out)

    def tenant(self, key: str) -> str | None:
        """The tenant of ``key``, or ``None`` for an unknown key."""
        return self.tenants.get(_digest(key))


def parse_pairs(text: str, where: str) -> dict[str, str]:
    """``key=tenant`` / ``key tenant`` pairs separated by commas or newlines."""
    pairs: dict[str, str] = {}
    for number, raw in enumerate(text.replace(",", "\n").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, tenant = line.partition("=") if "=" in line else line.partition(" ")
        if not sep or not key.strip() or not tenant.strip():
            raise UserError(
                f"{where}: entry {number} is not `key=tenant` (or `key tenant`); fix that line"
            )
        pairs[key.strip()] = tenant.strip()
    return pairs


def load_keys(path: str | os.PathLike[str] | None = None) -> ApiKeys:
    """Keys from the file ``path`` (JSON object or pairs), else from ``LOOPWRIGHT_SERVE_KEYS``."""
    if path is None:
        return ApiKeys.from_mapping(parse_pairs(os.environ.get(KEYS_ENV, ""), KEYS_ENV))
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise UserError(f"--keys-file {path}: cannot read it ({exc.strerror})") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UserError(f"--keys-file {path}: invalid JSON ({exc})") from None
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise UserError(f"--keys-file {path}: the JSON object must map key strings to tenants")
        return ApiKeys.from_mapping(data)
    return ApiKeys.from_mapping(parse_pairs(text, str(path)))
