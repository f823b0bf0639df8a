"""What differs between a kept handler and a later one of the same name (first registration wins).

The bus warns once with these differences; secrets are compared by hash and never printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from goggles_io._util.report import report
from goggles_io._util.secret import REDACTED, fingerprint
from goggles_io.handlers.base import Handler

__all__ = ["differences", "warn_conflict"]


def differences(kept: Handler, ignored: Handler) -> list[str]:
    """The options of ``ignored`` that differ from ``kept``'s (``[]``: the same handler)."""
    return _spec_differences(_spec(kept), _spec(ignored))


def warn_conflict(kept: Handler, ignored: Handler, warned: set[tuple[str, str]]) -> None:
    """One line on stderr per name and set of differences (``warned`` remembers them)."""
    diffs = differences(kept, ignored)
    if not diffs:
        return
    key = (kept.name, "; ".join(diffs))
    if key in warned:
        return
    warned.add(key)
    report(
        f"handler name {kept.name!r} is already attached; the later attach is ignored "
        f"(first registration wins) and only its scopes are merged. Differing options: "
        f"{'; '.join(diffs)}"
    )


def _spec(handler: Handler) -> dict[str, Any]:
    try:
        spec = handler.to_dict()
    except Exception:
        spec = {"cls": type(handler).__qualname__, "data": {}}
    return dict(spec)


def _spec_differences(kept: Mapping[str, Any], incoming: Mapping[str, Any]) -> list[str]:
    diffs = []
    if kept.get("cls") != incoming.get("cls"):
        diffs.append(f"cls: {kept.get('cls')!r} != {incoming.get('cls')!r}")
    a, b = dict(kept.get("data") or {}), dict(incoming.get("data") or {})
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            diffs.append(f"{key}: kept {a.get(key)!r}, ignored {b.get(key)!r}")
    # Secrets are opaque: compared by hash, never printed.
    if fingerprint(kept.get("secrets")) != fingerprint(incoming.get("secrets")):
        diffs.append(f"secrets: kept {REDACTED}, ignored {REDACTED} (they differ)")
    return diffs
