"""The run directory's ``log.jsonl`` lines: robo-goggles' fields, then ours, as strict JSON.

A line holds robo-goggles' keys in its order — ``kind``, ``scope``, ``payload``, ``filepath``,
``lineno``, ``level`` (log events only), ``step`` and ``time`` (when set), one flat
``extra.<key>`` per extra (bound fields first) — and then what goggles_io's own readers use
beside them: ``timestamp``, ``logger``, ``pid``; for arrays ``shape`` and ``dtype``; for a
picture ``visualization``; for a failure ``error``; for non-finite numbers ``_nonfinite``.
A media event's ``payload`` is its file's path relative to the run directory.

JSON has no NaN or Infinity: they are written as the strings ``"NaN"``, ``"Infinity"`` and
``"-Infinity"``, and ``_nonfinite`` lists where (``[["payload", "loss"], ...]``), so that
:func:`read_events` turns exactly those back into floats: the convention of every file the
project writes, :mod:`nonfinite_json` (docs/runs-and-sinks.md).

A line names its event without an added field: :func:`identity` is the line less what the
handler derived while writing it (a media file's path, its shape, an error), so a redelivered
event can be recognised in a file written by a handler instance that is gone.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

import nonfinite_json
from goggles_io._event.records import Event, Kind
from goggles_io.exceptions import InvalidNameError

__all__ = [
    "EVENTS_FILE",
    "LOG_FILE",
    "EventLog",
    "encode_line",
    "identity",
    "media_parts",
    "read_events",
    "record",
    "safe_filename",
    "stamp",
]

LOG_FILE = "log.jsonl"
EVENTS_FILE = "events.jsonl"  # the file of runs written before 0.2 (nested ``extra``)
_MAX_NAME_CHARS = 120  # leaves room for "_<step>-<n>.<ext>" under the 255-byte limit
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MEDIA = frozenset(
    k.value
    for k in (
        Kind.IMAGE,
        Kind.VIDEO,
        Kind.ARTIFACT,
        Kind.HISTOGRAM,
        Kind.VECTOR_FIELD,
        Kind.TRAJECTORIES,
    )
)
# What the handler adds to a media line while writing its file: not part of what was logged.
_DERIVED = frozenset(
    {"shape", "dtype", "visualization", "visualization_error", "error", "bytes", "source"}
)


def safe_filename(name: str) -> str:
    """Return ``name`` as one harmless file-name component.

    Separators, ``..``, NUL, control and non-ASCII characters become ``_``; leading dots are
    dropped (no hidden files, no ``..``); the result is never empty and at most 120 characters.
    The original name is kept in ``log.jsonl``, so this only has to be safe, not reversible.

    Raises:
        InvalidNameError: ``name`` is not a ``str``.
    """
    if not isinstance(name, str):
        msg = f"name must be a str (got {name!r}, a {type(name).__name__})."
        raise InvalidNameError(msg, name=name)
    cleaned = _UNSAFE.sub("_", name).lstrip(".")[:_MAX_NAME_CHARS]
    return cleaned or "_"


def media_parts(name: str, step: int | None) -> tuple[list[str], str]:
    """``(sub-folders, stem)`` of a media file: ``eval/confusion`` at 2 -> ``(["eval"], "confusion_2")``.

    A ``/`` makes a sub-folder, as in robo-goggles; every part goes through
    :func:`safe_filename` and empty parts are dropped, so no name leaves the run directory.
    """
    parts = [safe_filename(p) for p in name.split("/") if p.strip(". ")] or [safe_filename(name)]
    stem = parts[-1] + ("" if step is None else f"_{step}")
    return parts[:-1], stem


def record(event: Event) -> dict[str, Any]:
    """The line of ``event`` in robo-goggles' key order, ``payload`` not yet filled for media."""
    line: dict[str, Any] = {
        "kind": Kind(event.kind).value,
        "scope": event.scope,
        "payload": event.payload,
        "filepath": event.filepath,
        "lineno": event.lineno,
    }
    if event.level is not None:
        line["level"] = event.level
    if event.step is not None:
        line["step"] = event.step
    if event.time is not None:
        line["time"] = event.time
    extra = event.extra
    bound = extra.get("bound")
    if isinstance(bound, Mapping):
        for key, value in bound.items():
            line[f"extra.{key}"] = value
    for key, value in extra.items():
        if key != "bound":
            line[f"extra.{key}"] = value
    line["timestamp"] = event.timestamp
    line["logger"] = event.logger
    line["pid"] = event.pid
    return line


def encode_line(line: dict[str, Any]) -> bytes:
    """One strict-JSON line (UTF-8, ``\\n``-terminated); non-finite floats listed in ``_nonfinite``."""
    text = nonfinite_json.dumps(line, default=_default, ensure_ascii=False)
    # backslashreplace turns a lone surrogate into its JSON escape: lossless, valid UTF-8
    return (text + "\n").encode("utf-8", errors="backslashreplace")


def identity(line: Mapping[str, Any]) -> str:
    """What names a line's event: the line as JSON text, less what writing it derived.

    ``line`` is :func:`record` output or a line read back (``json.loads``, non-finite numbers
    not restored): both give the same text for the same event. A media line leaves out its
    ``payload`` (the file's path, which depends on the files already there).
    """
    media = line.get("kind") in _MEDIA
    kept = {
        k: v
        for k, v in line.items()
        if k not in _DERIVED and k != "_nonfinite" and not (media and k == "payload")
    }
    return json.dumps(_jsonable(kept), ensure_ascii=True, allow_nan=False)


def stamp(event: Event) -> bytes:
    """The bytes ``"timestamp": …, "logger": …, "pid": …`` exactly as the event's line holds them.

    A quick filter: a line without them is not the event's (:func:`identity` decides).
    """
    part = {"timestamp": event.timestamp, "logger": event.logger, "pid": event.pid}
    text = json.dumps(_jsonable(part), ensure_ascii=False, allow_nan=False)[1:-1]
    return text.encode("utf-8", errors="backslashreplace")


@attrs.frozen
class EventLog:
    """What :func:`read_events` found: the lines as dicts, and the lines it had to skip."""

    events: list[dict[str, Any]]
    skipped_lines: list[int]

    @property
    def skipped(self) -> int:
        """How many lines were unreadable (a torn last line after a crash, for instance)."""
        return len(self.skipped_lines)

    def to_events(self) -> list[Event]:
        """The lines as :class:`Event` s (media payloads stay file paths)."""
        return [Event.from_dict(line) for line in self.events if line.get("kind") in _KINDS]


_KINDS = frozenset(k.value for k in Kind)


def read_events(path: str | os.PathLike[str]) -> EventLog:
    """Read a run's ``log.jsonl`` (or an old run's ``events.jsonl``), tolerating crash damage.

    ``path`` is the file or the run directory (``log.jsonl`` first, else ``events.jsonl``). A
    line that is not valid UTF-8 JSON object text — typically the last line, torn when the
    writer was killed mid-write — is skipped and its 1-based number reported in
    ``skipped_lines``; it is never fatal. Non-finite floats are restored (see the module doc).
    """
    file = Path(path)
    if file.is_dir():
        file = file / LOG_FILE if (file / LOG_FILE).exists() else file / EVENTS_FILE
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
            events.append(nonfinite_json.restore(obj))
    return EventLog(events=events, skipped_lines=skipped)


def _default(value: Any) -> Any:
    """What JSON cannot hold as it is: numpy values as lists/numbers, bytes by size, else repr."""
    tolist = getattr(value, "tolist", None)  # numpy scalars and arrays, without importing numpy
    if callable(tolist) and hasattr(value, "dtype"):
        return tolist()
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value)}
    return repr(value)


def _jsonable(value: Any) -> Any:
    """``value`` as strict-JSON builtins, non-finite floats as their strings."""
    return nonfinite_json.plain(value, _default)[0]
