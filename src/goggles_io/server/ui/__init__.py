"""The web dashboard of ``telemetry ui`` / ``telemetry collector``: runs, charts, stats, media.

Served by :class:`goggles_io.server.collector.Collector` as part of its one ASGI application (ADR
0023); needs the ``[ui]`` extra. :func:`make_ui_app` builds the Starlette app over a
collector's database and a list of run directories (or roots holding them).
"""

from __future__ import annotations

from goggles_io.server.ui._app import make_ui_app

__all__ = ["make_ui_app"]
