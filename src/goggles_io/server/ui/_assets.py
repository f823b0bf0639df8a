"""The page's static files: our own ``static/`` and uPlot, each under a content-hashed name.

uPlot (MIT, (c) Leon Sorokin) comes from the ``youplot`` wheel of the ``[ui]`` extra, which
ships npm ``uplot@1.6.31``'s ``dist/uPlot.iife.min.js`` byte for byte; nothing is copied into
this repository. The wheel is found without importing it (its Python API is not needed) and
the file's sha256 is checked at start: a different file fails loudly with what to install,
never silently. Hashed names let the browser cache every file for a year (``immutable``) and
revalidate only the tiny page, which is what makes a reload fast.
"""

from __future__ import annotations

import hashlib
import importlib.util
from importlib import resources
from pathlib import Path

import attrs

__all__ = ["UPLOT_PACKAGE", "UPLOT_SHA256", "Asset", "Assets", "load_assets"]

UPLOT_PACKAGE = "youplot==1.0.0"
UPLOT_SHA256 = "2d27e8ad3d228164525ce213f9dc716f39b4e3aee0cc773fb3491c96cf4921a2"  # uPlot 1.6.31
UPLOT_CSS_SHA256 = "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04"
_OWN = (
    "util.js",
    "axes.js",
    "charts.js",
    "panels.js",
    "runs.js",
    "media.js",
    "stats.js",
    "hparams.js",
    "app.js",
    "app.css",
)
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


@attrs.frozen
class Asset:
    """One static file: its bytes, media type and the hashed URL the page uses."""

    name: str
    url: str
    body: bytes
    media_type: str


@attrs.frozen
class Assets:
    """Every static file by URL, and the page with the hashed URLs filled in."""

    by_url: dict[str, Asset]
    page: bytes


def _uplot_dir() -> Path:
    spec = importlib.util.find_spec("youplot")  # finds the wheel without running its __init__
    if spec is None or not spec.submodule_search_locations:
        msg = (
            "the dashboard's charts need uPlot from the youplot wheel: "
            f"pip install 'split-telemetry[ui]' (or pip install {UPLOT_PACKAGE})"
        )
        raise ImportError(msg)
    return Path(next(iter(spec.submodule_search_locations))) / "vendor"


def _checked(path: Path, sha256: str) -> bytes:
    try:
        body = path.read_bytes()
    except OSError as exc:
        msg = f"cannot read uPlot at {str(path)!r} ({exc}); reinstall {UPLOT_PACKAGE}"
        raise ImportError(msg) from None
    got = hashlib.sha256(body).hexdigest()
    if got != sha256:
        msg = (
            f"{str(path)!r} is not the pinned uPlot 1.6.31 (sha256 {got[:16]}..., expected "
            f"{sha256[:16]}...): install exactly {UPLOT_PACKAGE}"
        )
        raise ImportError(msg)
    return body


def _asset(name: str, body: bytes) -> Asset:
    stem, _dot, ext = name.rpartition(".")
    digest = hashlib.sha256(body).hexdigest()[:12]
    return Asset(name, f"/static/{stem}-{digest}.{ext}", body, _TYPES["." + ext])


def load_assets() -> Assets:
    """Read, check and name every static file once, at app start.

    Raises:
        ImportError: youplot is not installed, or its uPlot is not the pinned file.
    """
    vendor = _uplot_dir()
    files = [
        _asset("uplot.js", _checked(vendor / "uplot.iife.min.js", UPLOT_SHA256)),
        _asset("uplot.css", _checked(vendor / "uplot.min.css", UPLOT_CSS_SHA256)),
    ]
    static = resources.files("goggles_io.server.ui") / "static"
    files += [_asset(name, (static / name).read_bytes()) for name in _OWN]
    page = (static / "index.html").read_text(encoding="utf-8")
    for asset in files:
        page = page.replace(f"{{{{{asset.name}}}}}", asset.url)
    return Assets({a.url: a for a in files}, page.encode("utf-8"))
