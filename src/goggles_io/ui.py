"""The old public path of the dashboard: ``from goggles_io.ui import make_ui_app`` works.

The dashboard now lives in :mod:`goggles_io.server.ui` (ADR 0024).
"""

from __future__ import annotations

from goggles_io.server.ui import make_ui_app

__all__ = ["make_ui_app"]
