"""``LocalStorageHandler``: robo-goggles' run directory — ``log.jsonl`` plus media folders.

Layout under ``path`` (``docs/goggles_io-handlers.md`` has every field)::

    log.jsonl                                   one JSON object per event (see _layout.py)
    images/<name>_<step>.<format>               png, jpg, bmp, gif, tiff, webp
    videos/<name>_<step>.gif | .mp4
    histograms/<name>_<step>.npy                the raw samples (np.save, no pickle)
    vector_fields/<name>_<step>.npy             + visualizations/<name>_<step>.png on request
    trajectories/<name>_<step>.npy              + visualizations/<name>_<step>.png on request
    artifacts/<name>_<step>.<ext>               bytes written, or the file/directory copied

A ``/`` in a name makes a sub-folder (``images/eval/confusion_2.png``); an unnamed event is
stored under its kind (``images/image_3.png``). A media file that cannot be encoded (a library
missing, an odd frame size) is saved as ``.npy`` instead and its line says why, so nothing
logged is lost. Runs written before this layout have ``events.jsonl``; :func:`read_events`
reads both. An event sent again after its host died is skipped when ``log.jsonl`` holds it:
the file keeps, beside it in ``.log.jsonl.seq``, the last sequence it holds from each producer
(ADR 0057), so each event has one line. Beside it too, ``.log.jsonl.pts``, ``.names`` and
``.chunks`` hold the plain metric points as columns, committed with each write, which
``telemetry ui`` reads instead of the text where they match it (ADR 0080; ``columns=False``: none).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from goggles_io._event.records import Event, Kind
from goggles_io.exceptions import ConfigurationError
from goggles_io.handlers import _media
from goggles_io.handlers._files import LineFile, read_region
from goggles_io.handlers._layout import (
    EVENTS_FILE,
    LOG_FILE,
    EventLog,
    encode_line,
    media_parts,
    read_events,
    record,
    safe_filename,
)
from goggles_io.handlers._resume import LOG_TAIL_BYTES, last_written_at, names, written_head
from goggles_io.handlers.base import ALL_KINDS, BaseHandler, register_handler
from goggles_io.handlers.sequences import Sequences

__all__ = [
    "EVENTS_FILE",
    "LOG_FILE",
    "MEDIA_DIRS",
    "EventLog",
    "LocalStorageHandler",
    "read_events",
    "safe_filename",
]

_FLUSH_INTERVAL_S = 0.5  # push the write buffer to the OS at least this often while busy
_HOST_START_S = 0.05  # a media file this much older than our open() is not ours (clock ticks)
_VIDEO_FORMATS = ("auto", "gif", "mp4")
MEDIA_DIRS = {
    Kind.IMAGE: "images",
    Kind.VIDEO: "videos",
    Kind.ARTIFACT: "artifacts",
    Kind.HISTOGRAM: "histograms",
    Kind.VECTOR_FIELD: "vector_fields",
    Kind.TRAJECTORIES: "trajectories",
}
_VISUALIZATIONS = "visualizations"
_logger = logging.getLogger(__name__)


@register_handler
class LocalStorageHandler(BaseHandler):
    """Write every event under one directory: ``log.jsonl`` plus robo-goggles' media folders.

    Lines are written through a buffer that is pushed to the OS at every ``flush()`` and at
    least every half second while events arrive; ``close()`` also fsyncs, so a finished run is
    on disk. Re-opening appends. Only whole lines are written: when the disk is full, a write
    is truncated back to its last complete line, the lines that did not fit are counted
    (``losses()["write_failed"]``, also in ``finish()``) and the first failure is reported once
    on stderr with the count. A media file that cannot be written is counted as
    ``media_failed`` and its line says why. An existing file is never overwritten (a ``-1``,
    ``-2`` suffix is added) and no name leads outside ``path``. After a crash, re-opening
    removes a torn last line, and a list redelivered after its host died has the head that the
    dead host's handler already wrote skipped (:meth:`handle_redelivered`).

    Args:
        path: the run directory (created on open); stored absolute, so a host process with
            another working directory writes to the same place.
        name: bus-wide handler name; defaults to ``"storage:<absolute path>"``.
        level: minimum level of ``LOG`` events written.
        video_format: ``"gif"``, ``"mp4"`` (needs imageio-ffmpeg: ``pip install
            'split-telemetry[media]'``) or ``"auto"`` (mp4 when it is installed, else gif), for
            videos logged without a ``format``; a per-call ``format`` wins.

    Raises:
        ConfigurationError: ``path`` is empty or not path-like, ``video_format`` is unknown, or
            it is ``"mp4"`` and imageio-ffmpeg is not installed.
        columns: also keep the metric points as columns beside ``log.jsonl``
            (``.log.jsonl.pts``, ``.names``, ``.chunks``), so that ``telemetry ui`` indexes
            the run without parsing its text (ADR 0080); ``log.jsonl`` stays the record.
    """

    capabilities: ClassVar[frozenset[Kind]] = ALL_KINDS

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        level: int = logging.NOTSET,
        *,
        video_format: str = "auto",
        columns: bool = True,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            msg = f"path must be a non-empty str or os.PathLike (got {path!r})."
            raise ConfigurationError(msg, key="path", value=path)
        if video_format not in _VIDEO_FORMATS:
            msg = f"video_format must be one of {_VIDEO_FORMATS!r} (got {video_format!r})."
            raise ConfigurationError(msg, key="video_format", value=video_format)
        if video_format == "mp4" and not _media.has_mp4():
            msg = (
                "video_format='mp4' needs imageio-ffmpeg, which is not installed: "
                f"{_media.MEDIA_INSTALL}, or pass video_format='gif' or 'auto'."
            )
            raise ConfigurationError(msg, key="video_format", value=video_format)
        self.path = Path(os.path.abspath(os.fspath(path)))
        super().__init__(name=f"storage:{self.path}" if name is None else name, level=level)
        self.video_format = video_format
        self.columns = bool(columns)
        self.media_errors = 0
        self.media_lost = 0
        self._file: LineFile | None = None
        self._last_flush = 0.0
        self.skipped_redelivered = 0  # events of redelivered lists found already written
        # (after, before): media files modified in it were left by a killed writer (see open)
        self._orphan_window: tuple[float, float] | None = None
        self._region: bytes | None = None  # log.jsonl's tail, while a redelivered list is written
        self._seqs = Sequences()  # the last sequence log.jsonl holds per producer (ADR 0057)

    def config(self) -> dict[str, Any]:
        return {
            **super().config(),
            "path": str(self.path),
            "video_format": self.video_format,
            "columns": self.columns,
        }

    def open(self) -> None:
        """Create the directory, its media folders and ``log.jsonl`` (appended to)."""
        if self._file is not None:
            return
        for folder in MEDIA_DIRS.values():
            (self.path / folder).mkdir(parents=True, exist_ok=True)
        lines = LineFile(self.path / LOG_FILE, self.name, sequenced=True, columns=self.columns)
        if self._lost_before:
            lines.lost_lines = self._lost_before  # counts survive a close/re-open
        lines.open()  # cuts a torn last line off; reads which events it holds (ADR 0057)
        self._seqs = Sequences(lines.marks)
        # A media file written in this window and named by no line was left by a killed writer.
        since = last_written_at(lines.path)
        self._orphan_window = None if since is None else (since, time.time() - _HOST_START_S)
        self._file = lines
        self._last_flush = time.monotonic()

    _lost_before = 0

    def losses(self) -> dict[str, int]:
        """Events not written (``write_failed``: a full disk) and media files not written."""
        lost = self._file.lost_lines if self._file is not None else self._lost_before
        counts = {"write_failed": lost, "media_failed": self.media_lost}
        return {reason: n for reason, n in counts.items() if n}

    def handle(self, event: Event) -> None:
        """Append one line; a media payload goes to its own file first. An event ``log.jsonl``
        already holds (its producer's sequence is not above the last one written) is skipped."""
        if self._file is None:
            self.open()
        if not self._seqs.fresh(event):
            self.skipped_redelivered += 1
            return
        line = record(event)
        if event.kind in MEDIA_DIRS:
            self._write_media(event, line)
        data = encode_line(line)
        file = self._file
        assert file is not None
        if file.columns is not None:
            file.columns.add(event)  # before the line: adding it may write it
        file.add(data, 1, event.producer, event.seq)
        now = time.monotonic()
        if now - self._last_flush >= _FLUSH_INTERVAL_S:
            file.flush()
            self._last_flush = now

    def handle_redelivered(self, events: list[Event]) -> None:
        """Write a list a dead host may have written a head of: skip that head, write the rest.

        Numbered events (``Event.seq``, ADR 0057) that ``log.jsonl`` holds are skipped by
        :meth:`handle`, exactly. Unnumbered ones (a dead process's left-overs) are looked for
        among the last 16 MiB of ``log.jsonl`` by each line's identity (timestamp, pid,
        logger, scope, step, what was logged). A media file the dead host wrote for the rest,
        but whose line it never wrote, is written over rather than kept beside a ``-1`` copy.
        """
        if self._file is None:
            self.open()
        assert self._file is not None
        self._file.flush()  # our own lines too: a list resent to a live host is skipped whole
        region = read_region(self._file.path, self._file.size(), LOG_TAIL_BYTES)
        skip = 0 if events and events[0].producer else written_head(events, region)
        self.skipped_redelivered += skip
        self._region = region
        try:
            for event in events[skip:]:
                self.handle(event)
        finally:
            self._region = None

    def flush(self) -> None:
        """Push buffered lines to the OS (not to disk: that is what ``close`` adds)."""
        if self._file is not None:
            self._file.flush()
            self._last_flush = time.monotonic()

    def close(self) -> None:
        """Flush, fsync and close ``log.jsonl``; a later ``open`` appends."""
        if self._file is None:
            return
        file, self._file = self._file, None
        try:
            file.close()
        finally:
            self._lost_before = file.lost_lines

    # -- media --------------------------------------------------------------------------------
    def _write_media(self, event: Event, line: dict[str, Any]) -> None:
        kind, payload, extra = event.kind, event.payload, event.extra
        name = extra.get("name")
        if not isinstance(name, str) or not name:
            is_path = kind is Kind.ARTIFACT and isinstance(payload, str)
            name = Path(payload).stem if is_path else kind.value
        subdirs, stem = media_parts(name, event.step)
        folder = self.path.joinpath(MEDIA_DIRS[kind], *subdirs)
        if kind is Kind.ARTIFACT:
            ext = _media.artifact_ext(payload, extra.get("format"))
            line["payload"] = None
            if isinstance(payload, (bytes, bytearray)):
                line["bytes"] = len(payload)
            else:
                line["source"] = payload["path"] if isinstance(payload, dict) else payload
            self._save(folder, stem, ext, line, lambda f: _media.write_artifact(payload, f))
            return
        line["payload"] = None
        line["shape"], line["dtype"] = list(payload.shape), str(payload.dtype)
        if kind is Kind.IMAGE:
            fmt = str(extra.get("format") or "png").lower()
            if fmt not in _media.IMAGE_FORMATS:
                fmt = "png"
            write = lambda f: _media.write_image(payload, f, fmt)  # noqa: E731
            self._save(folder, stem, fmt, line, write, payload)
        elif kind is Kind.VIDEO:
            fmt = self._video_format(extra.get("format"))
            fps = float(extra.get("fps") or 30.0)
            write = lambda f: _media.write_video(payload, f, fmt, fps)  # noqa: E731
            self._save(folder, stem, fmt, line, write, payload)
        else:  # histogram, vector field, trajectories: the raw array, lossless
            self._save(folder, stem, "npy", line, lambda f: _media.write_npy(payload, f))
            if kind is not Kind.HISTOGRAM and extra.get("store_visualization"):
                self._visualize(event, subdirs, stem, line)

    def _visualize(self, event: Event, subdirs: list[str], stem: str, line: dict[str, Any]) -> None:
        """The PNG robo-goggles' storage draws beside a field or trajectories (on request)."""
        folder = self.path.joinpath(MEDIA_DIRS[event.kind], _VISUALIZATIONS, *subdirs)
        if event.kind is Kind.VECTOR_FIELD:
            draw: Callable[[Path], None] = lambda f: _media.write_vector_field_png(  # noqa: E731
                event.payload, f, event.extra
            )
        else:
            draw = lambda f: _media.write_trajectories_png(event.payload, f, event.extra)  # noqa: E731
        try:
            target = self._claim_and_write(folder, stem, "png", draw)
        except Exception as exc:
            self._media_error(line, "visualization_error", exc, "png")
            return
        line["visualization"] = target.relative_to(self.path).as_posix()

    def _claim_and_write(
        self, folder: Path, stem: str, ext: str, write: Callable[[Path], None]
    ) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        target, region = None, self._region
        if region is not None and self._orphan_window is not None:
            target = _media.orphan(
                folder,
                stem,
                ext,
                *self._orphan_window,
                named=lambda p: names(region, p.relative_to(self.path).as_posix()),
            )
        if target is None:
            target = _media.claim(folder, stem, ext)
        try:
            write(target)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        return target

    def _media_error(self, line: dict[str, Any], key: str, exc: BaseException, ext: str) -> None:
        self.media_errors += 1
        line[key] = f"{type(exc).__name__}: {exc}"
        if self.media_errors == 1:
            _logger.warning("%s: could not write a %s file (%s)", self.name, ext, exc)

    def _save(
        self,
        folder: Path,
        stem: str,
        ext: str,
        line: dict[str, Any],
        write: Callable[[Path], None],
        array: Any = None,
    ) -> None:
        try:
            target = self._claim_and_write(folder, stem, ext, write)
        except Exception as exc:
            self._media_error(line, "error", exc, ext)
            if array is None or ext == "npy":
                self.media_lost += 1  # nothing of it is on disk; the line says why
                return
            # Keep the pixels: a raw .npy always works without optional dependencies.
            try:
                target = self._claim_and_write(
                    folder, stem, "npy", lambda f: _media.write_npy(array, f)
                )
            except OSError as npy_exc:
                self.media_lost += 1
                line["error"] += f"; .npy fallback: {type(npy_exc).__name__}: {npy_exc}"
                return
        line["payload"] = target.relative_to(self.path).as_posix()

    def _video_format(self, requested: Any) -> str:
        wanted = requested if requested in ("gif", "mp4") else self.video_format
        if wanted == "gif" or not _media.has_mp4():
            return "gif"  # a per-call "mp4" without imageio-ffmpeg still gives a playable file
        return "mp4"
