"""Reading and writing the files of a run directory: ``.kv`` files and the last metric values.

``.kv`` files are ``key=value`` lines (UTF-8, sorted by insertion), written to a temporary file
and moved into place with :func:`os.replace`, so a reader never sees half a file. Newlines and
backslashes in values are escaped (``\\n``, ``\\\\``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["RunFileError", "last_metrics", "last_step", "overwrite_kv", "read_kv", "write_kv"]

_TAIL_BYTES = 256 * 1024  # enough for the last rows of any metrics file


def _escape(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"n": "\n", "r": "\r", "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class RunFileError(ValueError):
    """A run file cannot be read; the message names the file and line (``path``, ``line``)."""

    def __init__(self, msg: str, path: str, line: int | None = None) -> None:
        super().__init__(msg)
        self.path = path
        self.line = line


def _kv_text(mapping: Mapping[str, Any]) -> bytes:
    text = "".join(f"{k}={_escape(v)}\n" for k, v in mapping.items())
    return text.encode("utf-8", errors="backslashreplace")


def write_kv(path: str | os.PathLike[str], mapping: Mapping[str, Any]) -> None:
    """Write ``mapping`` as ``key=value`` lines, atomically (temp file + ``os.replace``).

    On failure (a full disk) the temporary file is removed and the error raised; the old file
    is untouched.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(_kv_text(mapping))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def overwrite_kv(path: str | os.PathLike[str], mapping: Mapping[str, Any]) -> None:
    """Rewrite an existing ``.kv`` file in place: the last resort when the disk is full.

    Not atomic, but it reuses the file's blocks, so it usually succeeds where a new file
    cannot be created.
    """
    with open(path, "r+b") as fh:
        fh.write(_kv_text(mapping))
        fh.truncate()
        fh.flush()
        os.fsync(fh.fileno())


def read_kv(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a ``.kv`` file; lines without ``=`` are skipped, values stay strings.

    Raises:
        RunFileError: a line is not valid UTF-8 (the message names the file and line).
        OSError: the file cannot be read.
    """
    result: dict[str, str] = {}
    raw_lines = Path(path).read_bytes().splitlines()
    for number, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"{os.fspath(path)}: line {number}: not valid UTF-8 ({exc.reason})"
            raise RunFileError(msg, os.fspath(path), number) from None
        key, sep, value = line.partition("=")
        if sep and key:
            result[key] = _unescape(value)
    return result


def _tail_lines(path: Path) -> list[str]:
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - _TAIL_BYTES))
        data = fh.read().decode("utf-8", errors="replace")
    lines = data.splitlines()
    if data and not data.endswith("\n"):
        lines = lines[:-1]  # a torn last line: the writer died mid-row
    return lines[1:] if size > _TAIL_BYTES else lines


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def _csv_last(path: Path) -> tuple[int | None, dict[str, float]]:
    with open(path, encoding="utf-8", newline="") as fh:
        header = next(csv.reader([fh.readline()]), [])
    rows = list(csv.reader(io.StringIO("\n".join(_tail_lines(path)))))
    step: int | None = None
    values: dict[str, float] = {}
    long_format = "name" in header and "value" in header
    for row in rows:
        if row == header or len(row) != len(header):
            continue  # the header itself, or a torn last row
        record = dict(zip(header, row, strict=True))
        raw_step = _number(record.get("step", ""))
        if raw_step is not None and math.isfinite(raw_step):
            step = int(raw_step)
        if long_format:
            value = _number(record["value"])
            if value is not None:
                values[record["name"]] = value
            continue
        for col, text in record.items():
            value = _number(text) if col not in ("step", "time", "timestamp") else None
            if value is not None:
                values[col] = value
    return step, values


def _jsonl_last(path: Path) -> tuple[int | None, dict[str, float]]:
    step: int | None = None
    values: dict[str, float] = {}
    for line in _tail_lines(path):
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a torn last line after a crash
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("step"), int):
            step = obj["step"]
        payload = obj.get("payload")
        if str(obj.get("kind")) == "metric" and isinstance(payload, dict):
            values.update({k: v for k, v in payload.items() if isinstance(v, (int, float))})
        elif isinstance(obj.get("name"), str) and isinstance(obj.get("value"), (int, float)):
            values[obj["name"]] = obj["value"]
    return step, values


def _metric_files(run_dir: Path) -> list[Path]:
    found = [*run_dir.glob("metrics.csv"), *run_dir.glob("*/metrics.csv")]
    found += [*run_dir.glob("events.jsonl"), *run_dir.glob("*/events.jsonl")]
    return found


def _scan(run_dir: Path) -> tuple[int | None, dict[str, float]]:
    step: int | None = None
    values: dict[str, float] = {}
    for path in _metric_files(run_dir):
        try:
            got_step, got = (_csv_last if path.suffix == ".csv" else _jsonl_last)(path)
        except (OSError, StopIteration, ValueError, csv.Error):
            continue  # unreadable or damaged: the other files still count
        values.update(got)
        if got_step is not None:
            step = got_step if step is None else max(step, got_step)
    return step, values


def last_step(run_dir: str | os.PathLike[str]) -> int | None:
    """The last step written to ``metrics.csv`` or ``events.jsonl`` in the run, or ``None``."""
    return _scan(Path(run_dir))[0]


def last_metrics(run_dir: str | os.PathLike[str]) -> dict[str, float]:
    """The last value of each metric in ``metrics.csv`` / ``events.jsonl`` of the run."""
    return _scan(Path(run_dir))[1]
