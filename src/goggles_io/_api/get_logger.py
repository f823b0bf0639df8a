"""``get_logger``: the one way to make a logger, text-only or with metrics.

Its own module so that neither logger module needs to import the other's.
"""

from __future__ import annotations

from typing import Any

from goggles_io._api.loggers import TextLogger
from goggles_io._api.media import GogglesLogger
from goggles_io._api.state import get_settings
from goggles_io._bus.transport import check_scope
from goggles_io._event import validate as v

__all__ = ["get_logger"]


def get_logger(
    name: str | None = None,
    *,
    scope: str = "global",
    with_metrics: bool = False,
    level: int | str = 0,
    **to_bind: Any,
) -> TextLogger | GogglesLogger:
    """Return a logger for ``name`` that routes to handlers attached on ``scope``.

    Args:
        name: shown by handlers; defaults to ``"root"``.
        scope: dot-separated scope; events also reach handlers on its parents.
        with_metrics: return a :class:`GogglesLogger` (scalars, images, ...) instead of text only.
        level: this logger's minimum level for text messages.
        **to_bind: fields attached to every event (see :meth:`TextLogger.bind`); named as in
            robo-goggles 0.3.6, whose ``get_logger`` takes them the same way, so
            ``get_logger("t", to_bind={"a": 1})`` binds one field named ``to_bind`` there too.

    Raises:
        InvalidNameError: ``name`` or ``scope`` is malformed.
        InvalidLevelError: ``level`` is not a level.
        ConfigurationError: a ``GOGGLES_*`` environment variable is malformed.
    """
    if name is None:
        name = "root"
    v.check_name(name, "name")
    check_scope(scope)
    lvl = v.check_level(level)
    get_settings()
    cls = GogglesLogger if with_metrics else TextLogger
    return cls(name, scope, lvl, to_bind)
