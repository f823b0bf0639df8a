"""``LocalStorageHandler``: every event as a JSON line, media as files, in one run directory.

Layout under ``path``::

    events.jsonl            one JSON object per event (strict JSON, UTF-8)
    images/<name>_<step>.png
    videos/<name>_<step>.mp4 | .gif
    histograms/<name>_<step>.npy     raw values (np.save, no pickle)
    vector_fields/<name>_<step>.npy
    artifacts/<name>                 bytes written / file copied as-is

Non-finite floats are not valid JSON: they are written as the strings ``"NaN"``, ``"Infinity"``,
``"-Infinity"`` and the line lists where (``"_nonfinite": [["payload", "loss"], ...]``) so that
:func:`read_events` turns exactly those back into floats. A media file that cannot be encoded
(pillow missing, odd frame size) is saved as ``.npy`` instead and the line says why, so nothing
logged is lost.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from goggles_io._event.records import Event, Kind
from goggles_io.exceptions import ConfigurationError, InvalidNameError
from goggles_io.handlers import _media
from goggles_io.handlers._files import LineFile
from goggles_io.handlers.base import ALL_KINDS, BaseHandler, register_handler

__all__ = ["EVENTS_FILE", "EventLog", "LocalStorageHandler", "read_events", "safe_filename"]

EVENTS_FILE = "events.jsonl"
_FLUSH_INTERVAL_S = 0.5  # push the write buffer to the OS at least this often while busy
_MAX_NAME_CHARS = 120  # leaves room for "_<step>-<n>.<ext>" under the 255-byte limit
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_VIDEO_FORMATS = ("auto", "gif", "mp4")
_DIRS = {
    Kind.IMAGE: "images",
    Kind.VIDEO: "videos",
    Kind.HISTOGRAM: "histograms",
    Kind.VECTOR_FIELD: "vector_fields",
    Kind.ARTIFACT: "artifacts",
}
_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_logger = logging.getLogger(__name__)


def safe_filename(name: str) -> str:
    """Return ``name`` as one harmless file-name component.

    Separators, ``..``, NUL, control and non-ASCII characters become ``_``; leading dots are
    dropped (no hidden files, no ``..``); the result is never empty and at most 120 characters.
    The original name is kept in ``events.jsonl``, so this only has to be safe, not reversible.

    Raises:
        InvalidNameError: ``name`` is not a ``str``.
    """
    if not isinstance(name, str):
        msg = f"name must be a str (got {name!r}, a {type(name).__name__})."
        raise InvalidNameError(msg, name=name)
    cleaned = _UNSAFE.sub("_", name).lstrip(".")[:_MAX_NAME_CHARS]
    return cleaned or "_"


@attrs.frozen
class EventLog:
    """What :func:`read_events` found: the events, and the lines it had to skip."""

    events: list[dict[str, Any]]
    skipped_lines: list[int]

    @property
    def skipped(self) -> int:
        """How many lines were unreadable (a torn last line after a crash, for instance)."""
        return len(self.skipped_lines)


def read_events(path: str | os.PathLike[str]) -> EventLog:
    """Read an ``events.jsonl`` file (or the directory holding it), tolerating crash damage.

    A line that is not valid UTF-8 JSON object text — typically the last line, torn when the
    writer was killed mid-write — is skipped and its 1-based number reported in
    ``skipped_lines``; it is never fatal. Non-finite floats are restored (see the module doc).
    Media entries keep their ``"file"`` relative to the directory.
    """
    file = Path(path)
    if file.is_dir():
        file = file / EVENTS_FILE
    events: list[dict[str, Any]] = []
    skipped: list[int] = []
    with open(file, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw.decode("utf-8"))
            except ValueError:  # JSONDecodeError and UnicodeDecodeError both subclass it
                skipped.append(number)
                continue
            if not isinstance(obj, dict):
                skipped.append(number)
                continue
            for where in obj.pop("_nonfinite", ()):
                _restore_nonfinite(obj, where)
            events.append(obj)
    return EventLog(events=events, skipped_lines=skipped)


@register_handler
class LocalStorageHandler(BaseHandler):
    """Write every event under one directory: ``events.jsonl`` plus media files.

    Lines are written through a buffer that is pushed to the OS at every ``flush()`` and at
    least every half second while events arrive; ``close()`` also fsyncs, so a finished run is
    on disk. Re-opening appends. Only whole lines are written: when the disk is full, a write
    is truncated back to its last complete line, the lines that did not fit are counted
    (``losses()["write_failed"]``, also in ``finish()``) and the first failure is reported once
    on stderr with the count. A media file that cannot be written is counted as
    ``media_failed`` and its line says why. File names come from :func:`safe_filename` and an existing file
    is never overwritten (a ``-1``, ``-2`` suffix is added), so nothing lands outside ``path``.

    Args:
        path: the run directory (created on open); stored absolute, so a host process with
            another working directory writes to the same place.
        name: bus-wide handler name; defaults to ``"storage:<absolute path>"``.
        level: minimum level of ``LOG`` events written.
        video_format: ``"gif"``, ``"mp4"`` (needs PyAV: ``pip install av``) or ``"auto"``
            (mp4 when PyAV is importable, else gif). A per-call ``format`` wins over it.

    Raises:
        ConfigurationError: ``path`` is empty or not path-like, ``video_format`` is unknown, or
            it is ``"mp4"`` and PyAV is not installed.
    """

    capabilities: ClassVar[frozenset[Kind]] = ALL_KINDS

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        level: int = logging.NOTSET,
        *,
        video_format: str = "auto",
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            msg = f"path must be a non-empty str or os.PathLike (got {path!r})."
            raise ConfigurationError(msg, key="path", value=path)
        if video_format not in _VIDEO_FORMATS:
            msg = f"video_format must be one of {_VIDEO_FORMATS!r} (got {video_format!r})."
            raise ConfigurationError(msg, key="video_format", value=video_format)
        if video_format == "mp4" and not _media.has_pyav():
            msg = (
                "video_format='mp4' needs PyAV, which is not installed: "
                f"{_media.MEDIA_INSTALL} av, or pass video_format='gif' or 'auto'."
            )
            raise ConfigurationError(msg, key="video_format", value=video_format)
        self.path = Path(os.path.abspath(os.fspath(path)))
        super().__init__(name=f"storage:{self.path}" if name is None else name, level=level)
        self.video_format = video_format
        self.media_errors = 0
        self.media_lost = 0
        self._file: LineFile | None = None
        self._last_flush = 0.0

    def config(self) -> dict[str, Any]:
        return {**super().config(), "path": str(self.path), "video_format": self.video_format}

    def open(self) -> None:
        """Create the directory and open ``events.jsonl`` for appending."""
        if self._file is not None:
            return
        self.path.mkdir(parents=True, exist_ok=True)
        lines = LineFile(self.path / EVENTS_FILE, self.name)
        if self._lost_before:
            lines.lost_lines = self._lost_before  # counts survive a close/re-open
        lines.open()
        self._file = lines
        self._last_flush = time.monotonic()

    _lost_before = 0

    def losses(self) -> dict[str, int]:
        """Events not written (``write_failed``: a full disk) and media files not written."""
        lost = self._file.lost_lines if self._file is not None else self._lost_before
        counts = {"write_failed": lost, "media_failed": self.media_lost}
        return {reason: n for reason, n in counts.items() if n}

    def handle(self, event: Event) -> None:
        """Append one line; media payloads go to their own file first."""
        if self._file is None:
            self.open()
        record = _base_record(event)
        kind = event.kind
        if kind in _DIRS:
            self._write_media(event, record)
        else:
            record["payload"] = event.payload
        nonfinite: list[list[Any]] = []
        line = json.dumps(_jsonable(record, [], nonfinite), ensure_ascii=False, allow_nan=False)
        if nonfinite:
            line = line[:-1] + ', "_nonfinite": ' + json.dumps(nonfinite) + "}"
        assert self._file is not None
        # backslashreplace turns a lone surrogate into its JSON escape: lossless, valid UTF-8
        self._file.add((line + "\n").encode("utf-8", errors="backslashreplace"))
        now = time.monotonic()
        if now - self._last_flush >= _FLUSH_INTERVAL_S:
            self._file.flush()
            self._last_flush = now

    def flush(self) -> None:
        """Push buffered lines to the OS (not to disk: that is what ``close`` adds)."""
        if self._file is not None:
            self._file.flush()
            self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush, fsync and close ``events.jsonl``; a later ``open`` appends."""
        if self._file is None:
            return
        file, self._file = self._file, None
        try:
            file.close()
        finally:
            self._lost_before = file.lost_lines

    # -- media --------------------------------------------------------------------------------
    def _write_media(self, event: Event, record: dict[str, Any]) -> None:
        kind = event.kind
        payload = event.payload
        extra = event.extra
        raw_name = extra.get("name")
        if not isinstance(raw_name, str) or not raw_name:
            is_path = kind is Kind.ARTIFACT and isinstance(payload, str)
            raw_name = Path(payload).stem if is_path else kind.value
        folder = self.path / _DIRS[kind]
        stem = safe_filename(raw_name) + ("" if event.step is None else f"_{event.step}")
        if kind is Kind.ARTIFACT:
            record["payload"] = _artifact_summary(payload)
            ext = _media.artifact_ext(payload, extra.get("format"))
            self._save(folder, stem, ext, record, lambda f: _media.write_artifact(payload, f))
            return
        record["payload"] = {"shape": list(payload.shape), "dtype": str(payload.dtype)}
        if kind is Kind.IMAGE:
            self._save(folder, stem, "png", record, lambda f: _media.write_png(payload, f), payload)
        elif kind is Kind.VIDEO:
            fmt = self._video_format(extra.get("format"))
            fps = float(extra.get("fps") or 20.0)
            write = lambda f: _media.write_video(payload, f, fmt, fps)  # noqa: E731
            self._save(folder, stem, fmt, record, write, payload)
        else:  # histogram, vector field: the raw array, lossless
            self._save(folder, stem, "npy", record, lambda f: _media.write_npy(payload, f))

    def _save(
        self,
        folder: Path,
        stem: str,
        ext: str,
        record: dict[str, Any],
        write: Any,
        array: Any = None,
    ) -> None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            target = _media.claim(folder, stem, ext)
            try:
                write(target)
            except BaseException:
                target.unlink(missing_ok=True)
                raise
        except Exception as exc:
            self.media_errors += 1
            record["error"] = f"{type(exc).__name__}: {exc}"
            if self.media_errors == 1:
                _logger.warning("%s: could not write a %s file (%s)", self.name, ext, exc)
            if array is None or ext == "npy":
                self.media_lost += 1  # nothing of it is on disk; the line says why
                return
            # Keep the pixels: a raw .npy always works without optional dependencies.
            try:
                target = _media.claim(folder, stem, "npy")
                _media.write_npy(array, target)
            except OSError as npy_exc:
                self.media_lost += 1
                record["error"] += f"; .npy fallback: {type(npy_exc).__name__}: {npy_exc}"
                return
            ext = "npy"
        record["file"] = target.relative_to(self.path).as_posix()
        record["format"] = ext

    def _video_format(self, requested: Any) -> str:
        wanted = requested if requested in ("gif", "mp4") else self.video_format
        if wanted == "gif" or not _media.has_pyav():
            return "gif"  # a per-call "mp4" without PyAV still gives a playable file
        return "mp4"


def _base_record(event: Event) -> dict[str, Any]:
    return {
        "kind": event.kind.value,
        "scope": event.scope,
        "step": event.step,
        "timestamp": event.timestamp,
        "logger": event.logger,
        "pid": event.pid,
        "level": event.level,
        "filepath": event.filepath,
        "lineno": event.lineno,
        "extra": event.extra,
    }


def _jsonable(value: Any, where: list[Any], nonfinite: list[list[Any]]) -> Any:
    """Return ``value`` as strict-JSON builtins; note where non-finite floats were replaced."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        nonfinite.append(list(where))
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, [*where, str(k)], nonfinite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, [*where, i], nonfinite) for i, v in enumerate(value)]
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays, without importing numpy
    if callable(tolist) and hasattr(value, "dtype"):
        return _jsonable(tolist(), where, nonfinite)
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value)}
    return repr(value)


def _restore_nonfinite(obj: Any, where: Any) -> None:
    if not isinstance(where, list) or not where:
        return
    parent = obj
    try:
        for key in where[:-1]:
            parent = parent[key]
        if parent[where[-1]] in _NONFINITE:
            parent[where[-1]] = _NONFINITE[parent[where[-1]]]
    except (KeyError, IndexError, TypeError):
        return  # a hand-edited line: leave it as it is


def _artifact_summary(payload: Any) -> dict[str, Any]:
    if isinstance(payload, (bytes, bytearray)):
        return {"bytes": len(payload)}
    return {"source": os.fspath(payload)}
