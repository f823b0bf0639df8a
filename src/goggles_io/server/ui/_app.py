"""The dashboard's routes (Starlette): the page, its JSON API, a live stream, media and exports.

Everything a run wrote reaches the page as JSON data, never as markup: the page builds its
DOM with ``textContent`` (``static/*.js``), so a metric called ``<script>`` is text. A run's
own files are served sandboxed, active types as downloads (``_headers.py``). Chart
code is uPlot from the ``youplot`` wheel (``_assets.py``). Answers come from the index as it
stands (``_sources.py`` reads the files in the background), so no request waits for a big log.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import threading
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from goggles_io._event.remote_protocol import dump_json
from goggles_io.runs import diff_configs
from goggles_io.server.ingest import KEY_COOKIE
from goggles_io.server.store import RunStore
from goggles_io.server.ui._assets import load_assets
from goggles_io.server.ui._groups import group_band
from goggles_io.server.ui._headers import attachment, run_file_headers
from goggles_io.server.ui._media import array_view, histogram_steps, inside, text_preview
from goggles_io.server.ui._series import export_rows, json_rows, metric_series
from goggles_io.server.ui._sources import Catalog
from goggles_io.server.ui._stats import read_alerts, stat_records

__all__ = ["make_ui_app"]

_TICK_S = 0.5  # live stream: how often the catalog's version is looked at
_MAX_POINTS = 4000  # buckets per series per request, whatever the page asks
_PLAIN = {"cache-control": "no-store"}
_IMMUTABLE = {"cache-control": "public, max-age=31536000, immutable"}


class _Json(JSONResponse):
    def render(self, content: Any) -> bytes:
        return dump_json(content)  # strict JSON: NaN and inf in the non-finite convention


def _float_arg(request: Request, name: str) -> float | None:
    text = request.query_params.get(name)
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value is not None and value - value == 0.0 else None


def _n_arg(request: Request) -> int:
    try:
        return min(max(int(request.query_params.get("n", "1000")), 16), _MAX_POINTS)
    except ValueError:
        return 1000


def _error(message: str, status: int = 404) -> Response:
    return _Json({"error": message}, status_code=status)


def make_ui_app(
    store: RunStore,
    run_dirs: list[str],
    stopping: threading.Event | None = None,
    index_dir: str | None = None,
) -> Starlette:
    """The dashboard over ``store`` (the collector's runs) and the runs under ``run_dirs``.

    ``stopping``, once set, ends the live streams (the collector sets it on shutdown);
    ``index_dir`` is where the metric index lives (default: the user's cache directory).

    Raises:
        ImportError: uPlot (the ``youplot`` wheel of the ``[ui]`` extra) is missing or altered.
    """
    assets = load_assets()
    catalog = Catalog(store, run_dirs, index_dir)
    catalog.start()
    stopping = threading.Event() if stopping is None else stopping
    page_tag = '"' + hashlib.sha256(assets.page).hexdigest()[:16] + '"'

    async def page(request: Request) -> Response:
        headers = {"cache-control": "no-cache", "etag": page_tag}
        key = request.query_params.get("key")
        if request.headers.get("if-none-match") == page_tag and not key:
            return Response(status_code=304, headers=headers)
        response = Response(assets.page, media_type="text/html; charset=utf-8", headers=headers)
        if key:  # already checked: keep it in a cookie so the page's own requests pass
            response.set_cookie(KEY_COOKIE, key, httponly=True, samesite="strict")
        return response

    async def static(request: Request) -> Response:
        asset = assets.by_url.get(request.url.path)
        if asset is None:
            return _error(f"no static file {request.path_params['name']!r}")
        return Response(asset.body, media_type=asset.media_type, headers=_IMMUTABLE)

    async def runs(request: Request) -> Response:
        reply = _Json({"runs": await asyncio.to_thread(catalog.summaries)}, headers=_PLAIN)
        catalog.answered()
        catalog.poke()
        return reply

    def _series(request: Request) -> dict[str, Any]:
        name = request.query_params.get("metric", "")
        axis = request.query_params.get("axis", "step")
        axis = axis if axis in ("step", "time", "custom") else "step"
        x0, x1, n = _float_arg(request, "x0"), _float_arg(request, "x1"), _n_arg(request)
        out = {}
        keys = request.query_params.getlist("run")
        catalog.want(keys)
        for key in keys:
            index = catalog.index(key)
            got = metric_series(index, name, axis, x0, x1, n) if index else None
            if got is not None:
                out[key] = got
        return {"metric": name, "axis": axis, "series": out}

    async def series(request: Request) -> Response:
        """One metric of the selected runs: buckets over the range, full resolution zoomed in."""
        return _Json(await asyncio.to_thread(_series, request), headers=_PLAIN)

    async def group(request: Request) -> Response:
        """A group's mean line and min-max band for one metric across its member runs."""
        got = await asyncio.to_thread(_series, request)
        band = group_band(list(got["series"].values()), _n_arg(request))
        return _Json({**band, "metric": got["metric"], "axis": got["axis"]}, headers=_PLAIN)

    async def export(request: Request) -> Response:
        """Every point of one metric of one run, as CSV or JSON (a download)."""
        key, name = request.query_params.get("run", ""), request.query_params.get("metric", "")
        fmt = request.query_params.get("format", "csv")
        index = catalog.index(key)
        if index is None or name not in index.metrics or fmt not in ("csv", "json"):
            return _error("no such run, metric or format (csv or json)")
        headers = {"content-disposition": attachment(f"{key}_{name}.{fmt}"), **_PLAIN}

        async def body() -> AsyncIterator[bytes]:
            yield (
                b"step,time,x,value\n"
                if fmt == "csv"
                else b'{"columns":["step","time","x","value"],"rows":['
            )
            first, done = True, 0
            found: list[list[Any]] = []  # paths of logged NaN/inf values (JSON)
            for rows in await asyncio.to_thread(lambda: list(export_rows(index, name))):
                if fmt == "csv":
                    buf = io.StringIO()
                    for row in rows.tolist():
                        buf.write(",".join("" if v != v else repr(v) for v in row) + "\n")
                    yield buf.getvalue().encode()
                else:
                    text = json_rows(rows, done, found)
                    done += len(rows)
                    if text:
                        yield (b"" if first else b",") + text
                        first = False
            if fmt == "json":
                listed = b',"_nonfinite":' + json.dumps(found).encode() if found else b""
                yield b"]" + listed + b"}"

        media = "text/csv" if fmt == "csv" else "application/json"
        return StreamingResponse(body(), media_type=media, headers=headers)

    async def alerts(request: Request) -> Response:
        run_dir = catalog.run_dir(request.query_params.get("run", ""))
        found = await asyncio.to_thread(read_alerts, run_dir) if run_dir else {"alerts": []}
        return _Json(found, headers=_PLAIN)

    async def diff(request: Request) -> Response:
        """The config of the selected runs side by side, differing keys flagged."""
        configs = {}
        for key in request.query_params.getlist("run"):
            config = catalog.config(key)
            if config is not None:
                configs[key] = config
        return _Json(diff_configs(configs).to_dict(), headers=_PLAIN)

    async def stats(request: Request) -> Response:
        key = request.query_params.get("run", "")
        run_dir = catalog.run_dir(key)
        if run_dir is None and not key.startswith("db:"):
            return _error(f"no run {key!r}")
        if run_dir is None:
            return _Json({"reason": "a collector run has no experiment stats", "overall": [],
                          "episodes": [], "modules": [], "alerts": [], "tables": {}})  # fmt: skip
        return _Json(await asyncio.to_thread(stat_records, run_dir), headers=_PLAIN)

    async def media(request: Request) -> Response:
        key = request.query_params.get("run", "")
        index = catalog.index(key)
        items = list(index.media) if index is not None else []
        out = []
        for item in items:
            shown = {k: v for k, v in item.items() if k != "source"}
            if "file" not in item:  # text: the item holds it
                out.append(shown)
                continue
            url = "/api/media/file?" + urlencode({"run": key, "path": item["file"]})
            if "visualization" in item:
                shown["visualization_url"] = "/api/media/file?" + urlencode(
                    {"run": key, "path": item["visualization"]}
                )
            out.append({**shown, "url": url})
        return _Json({"media": out}, headers=_PLAIN)

    def _target(request: Request) -> Any:
        run_dir = catalog.run_dir(request.query_params.get("run", ""))
        return inside(run_dir, request.query_params.get("path", "")) if run_dir else None

    async def media_file(request: Request) -> Response:
        target = _target(request)
        if target is None:
            return _error("no such media file in this run")
        return FileResponse(target, headers=run_file_headers(target))  # sandboxed: runs nothing

    async def media_data(request: Request) -> Response:
        """A histogram, trajectories or vector field reduced for drawing; an artifact's text."""
        target = _target(request)
        kind = request.query_params.get("kind", "")
        if target is None:
            return _error("no such media file in this run")
        try:
            if kind == "artifact":
                return _Json(await asyncio.to_thread(text_preview, target), headers=_PLAIN)
            return _Json(await asyncio.to_thread(array_view, target, kind), headers=_PLAIN)
        except (OSError, ValueError) as exc:
            return _error(str(exc), 422)

    async def histograms(request: Request) -> Response:
        """One histogram name over all its steps, on common bins."""
        key, name = request.query_params.get("run", ""), request.query_params.get("name", "")
        index, run_dir = catalog.index(key), catalog.run_dir(key)
        if index is None or run_dir is None:
            return _error("no such run directory")
        files = []
        for item in index.media:
            if item.get("kind") == "histogram" and item.get("name") == name and "file" in item:
                path = inside(run_dir, item["file"])
                if path is not None and path.suffix == ".npy":
                    files.append((item.get("step"), path))
        return _Json(await asyncio.to_thread(histogram_steps, files), headers=_PLAIN)

    async def stream(request: Request) -> Response:
        """Server-sent events: the runs table whenever anything in it may have changed."""

        async def events() -> AsyncIterator[bytes]:
            last, seen, idle = b"", -1, 0.0
            while not stopping.is_set():
                if catalog.version != seen or idle >= 2.0:
                    seen = catalog.version
                    data = dump_json({"runs": await asyncio.to_thread(catalog.summaries)})
                    if data != last:
                        last, idle = data, 0.0
                        yield b"data: " + data + b"\n\n"
                if idle >= 10.0:
                    idle = 0.0
                    yield b": keep-alive\n\n"
                if await request.is_disconnected():
                    return
                await asyncio.sleep(_TICK_S)
                idle += _TICK_S

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(f"no route for {request.method} {request.url.path!r}")

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/api/runs", runs),
        Route("/api/series", series),
        Route("/api/group", group),
        Route("/api/export", export),
        Route("/api/alerts", alerts),
        Route("/api/diff", diff),
        Route("/api/stats", stats),
        Route("/api/media", media),
        Route("/api/media/file", media_file),
        Route("/api/media/data", media_data),
        Route("/api/media/histograms", histograms),
        Route("/api/stream", stream),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found})
    app.state.catalog = catalog
    return app
