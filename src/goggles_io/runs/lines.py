"""The lines of a run's files as columns: one parser for every reader of metrics and media.

Over 400 lines, one piece: one parser of three line shapes whose fast paths share the same
column builders.

A run directory holds metrics in one or more of three shapes, and every tool that reads them
(the notebook API :mod:`goggles_io.runs.history`, the dashboard's index) goes through here:

- ``events.jsonl``: goggles_io's event log before 0.2 (nested ``extra``, ``timestamp``, media
  lines with ``file``);
- ``log.jsonl``: robo-goggles' layout (flat ``extra.<key>`` fields, media ``payload`` = the
  file's relative path, ``time`` = the caller's time), also what goggles_io writes from 0.2;
- ``metrics.csv``: ``CsvHandler``'s wide table (``step`` then one column per metric) or a
  long one (``step, name, value``).

Damaged lines (torn, not JSON, not an object) are skipped and counted, never fatal.
Non-finite numbers arrive as ``"NaN"``/``"Infinity"`` strings (JSON has none; the convention
of :mod:`nonfinite_json`); lines of older files with Python's bare ``NaN`` are read too.
"""

from __future__ import annotations

import csv
import io
import json
import math
from array import array
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

import nonfinite_json
from goggles_io._util.collector import collector_paused
from goggles_io._util.safe_read import iter_chunks, open_inside
from goggles_io.runs._metric_rows import MetricRows

__all__ = [
    "CSV_FILE",
    "EVENT_FILES",
    "MEDIA_KINDS",
    "TEXT_CHARS",
    "TFEVENTS_GLOB",
    "Columns",
    "Objects",
    "Parsed",
    "csv_rows",
    "file_objects",
    "json_lines",
    "json_objects",
    "metric_sources",
    "number",
]

EVENT_FILES = ("events.jsonl", "log.jsonl")
"""Event logs a run directory may hold: goggles_io's old one, then robo-goggles' layout."""
CSV_FILE = "metrics.csv"
TFEVENTS_GLOB = "events.out.tfevents.*"
"""The names TensorBoard's, torch's and tensorboardX's writers give their event files
(read by :mod:`goggles_io.runs.tfevents`)."""
MEDIA_KINDS = ("image", "video", "histogram", "vector_field", "trajectories", "artifact")
"""Media kinds the logger takes as files; each has its view in the dashboard (so has ``text``,
kept in the line itself)."""
TEXT_CHARS = 16_384
"""Characters of one text item kept in the index and shown (the log keeps all of it)."""

_NAN = math.nan
_NONFINITE = {"NaN": _NAN, "Infinity": math.inf, "-Infinity": -math.inf}
_TIME_COLUMNS = ("time", "timestamp", "wall_time")


def _loads() -> Callable[[bytes], Any]:
    try:  # 4x faster on big logs; part of the [ui] extra, optional everywhere else
        import orjson

        return orjson.loads
    except ImportError:  # pragma: no cover - depends on the environment
        return json.loads


_LOADS = _loads()


def number(value: Any) -> float | None:
    """``value`` as a float when it is a number (or a non-finite marker string), else ``None``."""
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if kind is str:
        return _NONFINITE.get(value)
    if kind is bool:
        return float(value)
    return None


def _floats() -> array[float]:
    return array("d")


@attrs.define
class Columns:
    """One metric's points: step, wall time (s), custom x, value; NaN where unknown.

    Columns are ``array('d')`` (8 bytes a value, no float objects): a chunk of a big log
    costs little memory on its way to disk, and ``numpy.frombuffer`` reads them without a copy.
    """

    step: array[float] = attrs.field(factory=_floats)
    time: array[float] = attrs.field(factory=_floats)
    x: array[float] = attrs.field(factory=_floats)
    value: array[float] = attrs.field(factory=_floats)
    x_axis: str | None = None

    def add(self, step: float, when: float, x: float, value: float) -> None:
        self.step.append(step)
        self.time.append(when)
        self.x.append(x)
        self.value.append(value)

    def __len__(self) -> int:
        return len(self.value)


@attrs.define
class Parsed:
    """What a chunk of lines held: metric columns by name, media and log lines, lines skipped."""

    metrics: dict[str, Columns] = attrs.field(factory=dict)
    media: list[dict[str, Any]] = attrs.field(factory=list)
    logs: int = 0
    skipped: int = 0

    def column(self, name: str) -> Columns:
        one = self.metrics.get(name)
        if one is None:
            one = self.metrics[name] = Columns()
        return one


def _extra(obj: dict[str, Any]) -> dict[str, Any]:
    """The line's extras: goggles_io's nested ``extra`` and robo-goggles' flat ``extra.<k>``."""
    nested = obj.get("extra")
    extra = dict(nested) if type(nested) is dict else {}
    for key, value in obj.items():
        if key.startswith("extra."):
            extra[key[6:]] = value
    return extra


def json_lines(
    lines: Iterable[bytes], folder: str = "", into: Parsed | None = None, *, by_line: bool = False
) -> Parsed:
    """Parse event-log lines (``events.jsonl`` or ``log.jsonl``) into columns and media items.

    ``folder`` prefixes media paths when the log sits one folder below the run directory.
    Plain metric lines (no custom x axis, no caller-given time) are read as whole columns
    (:func:`_plain_metrics`); every other line, and every line when ``by_line`` is set (the
    reference the tests compare with), is read one at a time by the same rules.
    """
    out = Parsed() if into is None else into
    with collector_paused():
        _json_lines(lines, folder, out, by_line)
    return out


def _json_lines(lines: Iterable[bytes], folder: str, out: Parsed, by_line: bool) -> None:
    prefix = f"{folder}/" if folder else ""
    rows = MetricRows(out.column, number)
    objs = _objects([raw for raw in lines if raw and not raw.isspace()])  # strip() would copy
    if not by_line and objs and set(map(type, objs)) == {dict}:
        kinds = [obj.get("kind") for obj in objs]
        metrics = kinds.count("metric")
        if metrics:
            plain = objs if metrics == len(objs) else [o for o in objs if o.get("kind") == "metric"]
            if _plain_metrics(plain, rows):
                if metrics == len(objs):
                    rows.flush()
                    return
                objs = [o for o in objs if o.get("kind") != "metric"]
    for obj in objs:
        if type(obj) is not dict:
            out.skipped += 1
            continue
        kind = obj.get("kind")
        if kind == "metric":
            _metric(obj, rows)
        elif kind in MEDIA_KINDS:
            item = _media(obj, kind, prefix)
            if item is not None:
                out.media.append(item)
        elif kind == "text":
            item = _text(obj)
            if item is not None:
                out.media.append(item)
        elif kind == "log":
            out.logs += 1
    rows.flush()


def _objects(lines: list[bytes]) -> list[Any]:
    """Each line parsed; ``None`` for a line that is no JSON (counted by the caller)."""
    try:
        return list(map(_LOADS, lines))  # the common chunk: every line strict JSON
    except ValueError:
        return [_object(raw) for raw in lines]


def _stamp(value: Any) -> float:
    if type(value) is float:
        return value
    got = number(value)
    return _NAN if got is None else got


def _plain_metrics(objs: list[dict[str, Any]], rows: MetricRows) -> bool:
    """Metric lines read as columns, when none has a custom x axis or a caller-given time.

    The same result as :func:`_metric` line after line, without Python per point: ``False``
    (nothing taken) when a line needs the per-line rules for its axes.
    """
    count = len(objs)
    payloads: list[Any] = [obj.get("payload") for obj in objs]
    if set(map(type, payloads)) != {dict}:
        return False  # a line without a payload dict: no points, read by the per-line rules
    if [obj.get("time") for obj in objs].count(None) != count:
        return False  # robo-goggles' caller-given time: an axis of its own
    if [obj.get("extra.x_axis") for obj in objs].count(None) != count:
        return False
    extras = [obj.get("extra") for obj in objs]
    if extras.count({}) + extras.count(None) != count and any(
        type(extra) is dict and type(extra.get("x_axis")) is str for extra in extras
    ):
        return False
    steps = [obj.get("step") for obj in objs]
    if set(map(type, steps)) == {int}:
        step = np.array(steps, dtype=np.float64)
    else:
        step = np.array([float(s) if type(s) is int else _NAN for s in steps], dtype=np.float64)
    stamps = [obj.get("timestamp") for obj in objs]
    if set(map(type, stamps)) != {float}:
        stamps = [_stamp(value) for value in stamps]
    when = np.array(stamps, dtype=np.float64)
    shapes = list(map(tuple, payloads))
    if shapes.count(shapes[0]) == count:  # the usual chunk of a dict logged whole: one shape
        rows.add_block(shapes[0], payloads, step, when)
        return True
    kinds = dict.fromkeys(shapes)
    names = [name for shape in kinds for name in shape]
    if len(names) == len(set(names)):  # each metric in one shape only: one block per shape
        _disjoint_blocks(shapes, list(kinds), payloads, step, when, rows)
        return True
    starts = [i for i in range(1, count) if shapes[i] != shapes[i - 1]]
    for start, stop in zip([0, *starts], [*starts, count], strict=True):
        rows.add_block(shapes[start], payloads[start:stop], step[start:stop], when[start:stop])
    return True


def _disjoint_blocks(
    shapes: list[tuple[str, ...]],
    kinds: list[tuple[str, ...]],
    payloads: list[Any],
    step: np.ndarray,
    when: np.ndarray,
    rows: MetricRows,
) -> None:
    """Lines whose shapes share no metric (``logger.scalar``'s one metric a line, metrics taking
    turns): the lines of each shape gathered into one block, each metric's points in line order.

    Why: cut at every change of shape, such a chunk was one block (and its numpy calls) a line.
    """
    code = dict(zip(kinds, range(len(kinds)), strict=True))
    ids = np.fromiter(map(code.__getitem__, shapes), dtype=np.intp, count=len(shapes))
    order = np.argsort(ids, kind="stable")
    bounds = np.searchsorted(ids[order], np.arange(len(kinds) + 1))
    picked = order.tolist()
    for k, shape in enumerate(kinds):
        part = order[bounds[k] : bounds[k + 1]]
        block = [payloads[i] for i in picked[bounds[k] : bounds[k + 1]]]
        rows.add_block(shape, block, step[part], when[part])


def _metric(obj: dict[str, Any], rows: MetricRows) -> None:
    """One metric line's axes; its points go to ``rows`` (converted a block at a time).

    Written for the common line (no custom axis, a float timestamp): the indexer's hot path.
    """
    payload = obj.get("payload")
    if type(payload) is not dict:
        return
    nested = obj.get("extra")
    if type(nested) is dict:  # events.jsonl: nested extras
        x_axis: Any = nested.get("x_axis")
        raw_x = nested.get("x")
    else:  # log.jsonl: flat ``extra.<key>`` fields
        x_axis, raw_x = obj.get("extra.x_axis"), obj.get("extra.x")
    x = number(raw_x) if type(x_axis) is str else None
    if x is None:
        x_axis = None
        given = obj.get("time")  # robo-goggles' caller-given time: an axis of its own
        if given is not None:
            x = number(given)
            if x is not None:
                x_axis = "time"
    stamp = obj.get("timestamp")
    if type(stamp) is not float:
        stamp = number(stamp)
    step = obj.get("step")
    rows.add(
        payload,
        float(step) if type(step) is int else _NAN,
        _NAN if stamp is None else stamp,
        _NAN if x is None else x,
        x_axis,
    )


def _media(obj: dict[str, Any], kind: str, prefix: str) -> dict[str, Any] | None:
    extra = _extra(obj)
    payload = obj.get("payload")
    path = obj.get("file")  # events.jsonl; log.jsonl's payload is the relative path
    path = path if type(path) is str else payload if type(payload) is str else None
    if path is None:
        return None
    name = extra.get("name")
    stamp = number(obj.get("timestamp"))
    item = {
        "kind": kind,
        "name": name if type(name) is str else kind,
        "step": obj.get("step") if type(obj.get("step")) is int else None,
        "file": prefix + path,
        "format": str(obj.get("format") or extra.get("format") or path.rsplit(".", 1)[-1]),
        "time": stamp,
    }
    for key in ("fps", "static", "mode"):
        if key in extra and type(extra[key]) in (int, float, bool, str):
            item[key] = extra[key]
    visual = obj.get("visualization")
    if type(visual) is str:
        item["visualization"] = prefix + visual
    if type(obj.get("error")) is str:
        item["error"] = obj["error"]
    return item


def _text(obj: dict[str, Any]) -> dict[str, Any] | None:
    """A named block of text (``log.text``, TensorBoard's ``add_text``) as a media item with the
    text itself (its first ``TEXT_CHARS`` characters; ``truncated`` says when there was more)."""
    payload = obj.get("payload")
    if type(payload) is not str:
        return None
    name = _extra(obj).get("name")
    return {
        "kind": "text",
        "name": name if type(name) is str else "text",
        "step": obj.get("step") if type(obj.get("step")) is int else None,
        "text": payload[:TEXT_CHARS],
        "truncated": len(payload) > TEXT_CHARS,
        "time": number(obj.get("timestamp")),
    }


def csv_rows(
    text: str, header: list[str] | None, into: Parsed | None = None
) -> tuple[Parsed, list[str] | None]:
    """Parse whole lines of a metrics CSV (the header first, unless already read).

    Returns the columns and the header (``None`` until it has been seen). Rows whose cell
    count differs from the header's (torn, foreign) are skipped and counted.
    """
    out = Parsed() if into is None else into
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if header is None:
            header = row
            continue
        if len(row) != len(header):
            out.skipped += 1
            continue
        _csv_row(dict(zip(header, row, strict=True)), out)
    return out, header


def _cell(text: str) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _csv_row(record: dict[str, str], out: Parsed) -> None:
    step = _cell(record.get("step", ""))
    step_v = step if step is not None and math.isfinite(step) else _NAN
    when = None
    for key in _TIME_COLUMNS:
        if key in record:
            when = _cell(record[key])
            break
    when_v = _NAN if when is None else when
    if "name" in record and "value" in record:
        pairs: Iterable[tuple[str, str]] = [(record["name"], record["value"])]
    else:
        skip = ("step", *_TIME_COLUMNS)
        pairs = [(k, v) for k, v in record.items() if k not in skip]
    for name, text_value in pairs:
        value = _cell(text_value)
        if value is not None:
            out.column(name).add(step_v, when_v, _NAN, value)


def metric_sources(run_dir: Path) -> list[Path]:
    """The files a run's metrics come from, in the order that owns a name seen in several.

    Event logs first (they carry wall time), then CSV tables, then TensorBoard event files
    (``events.out.tfevents.*``, also two folders down: ``add_scalars``' sub-writers); the run
    directory's own files, then one folder down (a handler given a sub-folder). A name already read from an earlier
    file is not read again from a later one: a run logging through both ``LocalStorageHandler``
    and ``CsvHandler`` has each point once.
    """
    found: list[Path] = []
    for name in (*EVENT_FILES, CSV_FILE):
        found += [p for p in (run_dir / name, *sorted(run_dir.glob(f"*/{name}"))) if p.is_file()]
    for pattern in (TFEVENTS_GLOB, f"*/{TFEVENTS_GLOB}", f"*/*/{TFEVENTS_GLOB}"):  # ADR 0040
        found += sorted(p for p in run_dir.glob(pattern) if p.is_file())
    return found


@attrs.frozen
class Objects:
    """The objects of a JSON-lines file, and how many lines were unreadable (shown, not hidden)."""

    items: list[dict[str, Any]]
    unreadable: int = 0


def json_objects(data: bytes) -> Objects:
    """The JSON objects among ``data``'s lines (``alerts.jsonl``, ``stats.jsonl``), their
    non-finite numbers restored; a line that is no JSON object is counted in ``unreadable``.
    """
    items: list[dict[str, Any]] = []
    unreadable = 0
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        obj = _object(raw)
        if obj is None:
            unreadable += 1
        else:
            items.append(nonfinite_json.restore(obj))
    return Objects(items, unreadable)


def _object(raw: bytes) -> dict[str, Any] | None:
    """One line as a dict, strict JSON or the bare ``NaN`` of older files; ``None`` if neither."""
    try:
        obj = _LOADS(raw)
    except ValueError:
        try:  # orjson refuses Python's NaN/Infinity literals; older files hold them
            obj = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            return None
    return obj if type(obj) is dict else None


def file_objects(run_dir: Path, name: str) -> Objects:
    """The JSON objects of ``run_dir / name`` (``alerts.jsonl``), read in bounded pieces: only a
    regular file inside the run; a line over ``MAX_LINE_BYTES`` or no JSON object counted in
    ``unreadable``; nothing when the file is absent or refused."""
    path = run_dir / name
    if not path.is_file():
        return Objects([])
    too_long = [0]
    items: list[dict[str, Any]] = []
    unreadable = 0
    try:
        with open_inside(run_dir, path) as fh:
            for chunk in iter_chunks(fh, too_long):
                part = json_objects(chunk)
                items += part.items
                unreadable += part.unreadable
    except OSError:
        return Objects([])
    return Objects(items, unreadable + too_long[0])
