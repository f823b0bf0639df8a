"""Secrets in handler specs: a str that never shows itself in a repr, an f-string or a log line.

A handler spec (``Handler.to_dict()``) carries secrets such as an API key under its own
``"secrets"`` part, so that the host process can rebuild an authenticated handler. Every value
there is a :class:`Secret`: ``repr()``, ``str()`` and ``format()`` print ``<redacted>``, while
msgpack and ``json`` still see the real characters (they read the str buffer directly). Code
that needs the value asks for it explicitly with :meth:`Secret.reveal`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["REDACTED", "Secret", "fingerprint", "wrap_secrets"]

REDACTED = "<redacted>"


class Secret(str):
    """A str whose text representations are ``<redacted>``; :meth:`reveal` returns the value."""

    __slots__ = ()

    def __new__(cls, value: str) -> Secret:
        # str(Secret) is "<redacted>": copy a Secret's characters, not its text form.
        raw = str.__str__(value) if isinstance(value, str) else value
        return super().__new__(cls, raw)

    def __repr__(self) -> str:
        return repr(REDACTED)

    def __str__(self) -> str:
        return REDACTED

    def __format__(self, spec: str) -> str:
        return format(REDACTED, spec)

    def reveal(self) -> str:
        """Return the secret as a plain str (for the one place that must send it)."""
        return str.__str__(self)


def fingerprint(secrets: Mapping[str, Any] | None) -> str:
    """Return a short hash of ``secrets``: comparable, and useless to whoever reads it."""
    import hashlib  # lazily: only a conflicting re-attach needs it (keeps import cheap)

    digest = hashlib.sha256()
    for key in sorted(secrets or {}):
        value = (secrets or {})[key]
        text = str.__str__(value) if isinstance(value, str) else repr(value)
        digest.update(f"{key}\0{text}\0".encode())
    return digest.hexdigest()[:12]


def wrap_secrets(secrets: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return ``secrets`` with every str value wrapped as a :class:`Secret` (others unchanged)."""
    return {k: Secret(v) if isinstance(v, str) else v for k, v in (secrets or {}).items()}
