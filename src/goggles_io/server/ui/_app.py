"""The dashboard's routes (Starlette): the page, its JSON API, a live stream and media files.

Everything a run wrote reaches the page as JSON data, never as markup: the page builds its
DOM with ``textContent`` (``static/app.js``), so a metric called ``<script>`` is text.
Chart code is plotly.js as shipped in the ``plotly`` wheel (the ``[ui]`` extra), served from
there, not copied into this repository.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from goggles_io._event.remote_protocol import dump_json
from goggles_io.server.ingest import KEY_COOKIE
from goggles_io.server.store import RunStore
from goggles_io.server.ui._downsample import downsample, window
from goggles_io.server.ui._sources import Catalog, inside, stat_records

__all__ = ["make_ui_app"]

_STATIC = resources.files("goggles_io.server.ui") / "static"
_TICK_S = 0.5  # live stream: how often the runs are looked at (points show within 2 s)
_MAX_POINTS = 4000  # per trace per request, whatever the page asks
_PLAIN = {"cache-control": "no-store"}


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        return dump_json(content)  # strict JSON: NaN and inf become null


def _plotly_js() -> Path:
    try:
        import plotly
    except ImportError as exc:
        from goggles_io.server.uvicorn_thread import missing_ui_extra

        raise missing_ui_extra(exc) from None
    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _float_arg(request: Request, name: str) -> float | None:
    text = request.query_params.get(name)
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None


def make_ui_app(
    store: RunStore, run_dirs: list[str], stopping: threading.Event | None = None
) -> Starlette:
    """The dashboard over ``store`` (the collector's runs) and the runs under ``run_dirs``.

    ``stopping``, once set, ends the live streams (the collector sets it on shutdown).
    """
    catalog = Catalog(store, run_dirs)
    stopping = threading.Event() if stopping is None else stopping
    plotly_js = _plotly_js()

    async def refreshed() -> None:
        await asyncio.to_thread(catalog.refresh)

    async def page(request: Request) -> Response:
        html = (_STATIC / "index.html").read_bytes()
        response = Response(html, media_type="text/html; charset=utf-8", headers=_PLAIN)
        key = request.query_params.get("key")
        if key:  # already checked: keep it in a cookie so the page's own requests pass
            response.set_cookie(KEY_COOKIE, key, httponly=True, samesite="strict")
        return response

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name == "plotly.min.js":
            # cached by the browser (and its compiled code with it): reloads skip ~2 s of parsing
            cache = {"cache-control": "public, max-age=86400"}
            return FileResponse(plotly_js, media_type="text/javascript", headers=cache)
        media = {"app.js": "text/javascript", "app.css": "text/css"}
        if name not in media:
            return _Json({"error": f"no static file {name!r}"}, status_code=404)
        return Response((_STATIC / name).read_bytes(), media_type=media[name], headers=_PLAIN)

    async def runs(request: Request) -> Response:
        await refreshed()
        return _Json({"runs": catalog.summaries()}, headers=_PLAIN)

    def traces(request: Request, names: list[str]) -> dict[str, Any]:
        keys = request.query_params.getlist("run")
        axis = request.query_params.get("axis", "step")
        try:
            n = min(max(int(request.query_params.get("n", "1000")), 16), _MAX_POINTS)
        except ValueError:
            n = 1000
        x0, x1 = _float_arg(request, "x0"), _float_arg(request, "x1")
        out: dict[str, Any] = {}
        for name in names:
            per_run = {}
            for key in keys:
                series = catalog.series(key).get(name)
                if series is None or not len(series):
                    continue
                x, y = window(*series.columns(axis), x0, x1)
                x, y = downsample(x, y, n)
                per_run[key] = {
                    "x": x.tolist(),
                    "y": y.tolist(),
                    "total": len(series),
                    "x_axis": series.x_axis if axis == "custom" else axis,
                }
            out[name] = per_run
        return out

    async def charts(request: Request) -> Response:
        """Every metric of the selected runs, thinned to about ``n`` points per trace."""
        await refreshed()
        keys = request.query_params.getlist("run")
        names = sorted({name for key in keys for name in catalog.series(key)})
        data = await asyncio.to_thread(traces, request, names)
        return _Json({"charts": data}, headers=_PLAIN)

    async def series(request: Request) -> Response:
        """One metric of the selected runs in ``[x0, x1]``: full resolution when zoomed in."""
        await refreshed()
        name = request.query_params.get("metric", "")
        data = await asyncio.to_thread(traces, request, [name])
        return _Json({"charts": data}, headers=_PLAIN)

    async def stats(request: Request) -> Response:
        run_dir = catalog.run_dir(request.query_params.get("run", ""))
        if run_dir is None:
            return _Json({"error": "no such run directory"}, status_code=404)
        return _Json(await asyncio.to_thread(stat_records, run_dir), headers=_PLAIN)

    async def media(request: Request) -> Response:
        key = request.query_params.get("run", "")
        items = [
            {**m, "url": "/api/media/file?" + urlencode({"run": key, "path": m["file"]})}
            for m in catalog.media(key)
        ]
        return _Json({"media": items}, headers=_PLAIN)

    async def media_file(request: Request) -> Response:
        run_dir = catalog.run_dir(request.query_params.get("run", ""))
        target = inside(run_dir, request.query_params.get("path", "")) if run_dir else None
        if target is None:
            return _Json({"error": "no such media file in this run"}, status_code=404)
        return FileResponse(target)

    async def stream(request: Request) -> Response:
        """Server-sent events: the runs table whenever anything in it changed."""

        async def events() -> AsyncIterator[bytes]:
            last = b""
            idle = 0.0
            while not stopping.is_set():
                await asyncio.to_thread(catalog.refresh, True)
                data = dump_json({"runs": catalog.summaries()})
                if data != last:
                    last, idle = data, 0.0
                    yield b"data: " + data + b"\n\n"
                elif idle >= 10.0:
                    idle = 0.0
                    yield b": keep-alive\n\n"
                if await request.is_disconnected():
                    return
                await asyncio.sleep(_TICK_S)
                idle += _TICK_S

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _Json(
            {"error": f"no route for {request.method} {request.url.path!r}"}, status_code=404
        )

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/api/runs", runs),
        Route("/api/charts", charts),
        Route("/api/series", series),
        Route("/api/stats", stats),
        Route("/api/media", media),
        Route("/api/media/file", media_file),
        Route("/api/stream", stream),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found})
    app.state.catalog = catalog
    return app
