"""Which Monty the adapter knows, and the one-line error when another one (or none) is there.

The adapter reads Monty's learning modules, its logger's data and its Hydra configs, none of
which Monty promises to keep from one release to the next: a version the adapter was not
checked against is refused at the first use, in one line, rather than failing later inside a
step with a ``KeyError``. ``SPLIT_TELEMETRY_MONTY_ANY_VERSION=1`` tries it anyway.
"""

from __future__ import annotations

import os
from importlib import metadata

from experiment_telemetry.exceptions import ExperimentTelemetryError

__all__ = ["KNOWN_SERIES", "MontyUnavailableError", "monty_version", "require_monty"]

KNOWN_SERIES = ("0.55",)
"""Monty releases (``major.minor``) the adapter was checked against, patch releases included."""
ANY_VERSION_ENV = "SPLIT_TELEMETRY_MONTY_ANY_VERSION"
_INSTALL = "docs/monty.md says how to install it"
_checked: str | None = None


class MontyUnavailableError(ExperimentTelemetryError, ImportError):
    """Monty (``tbp.monty``) is not installed, or is a version the adapter does not know."""


def monty_version() -> str | None:
    """The installed ``tbp.monty`` distribution's version, or None when it is not installed."""
    for name in ("tbp.monty", "tbp-monty"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def require_monty() -> str:
    """Return Monty's version once it is known to be usable; import nothing of it.

    Raises:
        MontyUnavailableError: not installed, or not one of ``KNOWN_SERIES`` (unless
            ``SPLIT_TELEMETRY_MONTY_ANY_VERSION=1``).
    """
    global _checked
    if _checked is not None:
        return _checked
    version = monty_version()
    if version is None:
        msg = f"the Monty adapter needs tbp-monty {KNOWN_SERIES[-1]}, which is not installed ({_INSTALL})."
        raise MontyUnavailableError(msg)
    series = ".".join(version.split(".")[:2])
    if series not in KNOWN_SERIES and os.environ.get(ANY_VERSION_ENV) != "1":
        msg = (
            f"tbp-monty {version} is a version the Monty adapter does not know (it knows "
            f"{', '.join(s + '.x' for s in KNOWN_SERIES)}); install tbp-monty=={KNOWN_SERIES[-1]}.0 "
            f"({_INSTALL}), or set {ANY_VERSION_ENV}=1 to try it anyway."
        )
        raise MontyUnavailableError(msg)
    _checked = version
    return version
