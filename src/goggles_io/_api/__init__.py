"""EMITTED: the ``gg.*`` surface a user calls, re-exported by ``goggles_io/__init__.py``.

``functions`` (attach, detach, configure, flush, finish, ...), ``state`` (the one place for
process-global state: settings, the active transport, step counters), ``get_logger``, ``loggers``
(:class:`TextLogger`), ``data`` (:class:`GogglesLogger`), ``timing``, ``shutdown`` and
``subscribe``.
"""

from __future__ import annotations

__all__: list[str] = []
