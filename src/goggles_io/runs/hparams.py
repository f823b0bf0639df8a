"""Hyperparameters as TensorBoard scripts record them, read back as a run's config.

Scripts that log to TensorBoard have no config file: CleanRL writes its arguments as a
markdown table, ``add_text("hyperparameters", "|param|value|\\n|-|-|\\n|lr|0.00025|...")``, and
others call ``add_hparams(dict, metrics)``. :func:`markdown_table` parses the first (the
compat writer records it with ``set_config``); :func:`tfevents_config` finds either in an old
run's event files, so ``telemetry diff`` and the dashboard's config columns work on them too.
Only the first ``MAX_SMALL_FILE_BYTES`` of each event file are looked at (hyperparameters are
written before training), and the answer is kept until the file changes.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

from goggles_io._util.safe_read import MAX_SMALL_FILE_BYTES, open_inside

__all__ = ["HPARAMS_TAGS", "markdown_table", "tfevents_config"]

HPARAMS_TAGS = ("hyperparameters", "hyperparameters/text_summary")
"""Text tags read as a config table: CleanRL's tag, and the tag torch's ``add_text`` writes."""
_KEY = re.compile(r"^[A-Za-z0-9_.\-/]+$")  # the keys RunContext.set_config takes
_RULE = re.compile(r"^:?-+:?$")
_CACHE_SIZE = 256
_cache: OrderedDict[tuple[str, int, int, int], dict[str, Any]] = OrderedDict()


def _cells(line: str) -> list[str] | None:
    text = line.strip()
    if not (text.startswith("|") and text.endswith("|")) or len(text) < 2:
        return None
    return [cell.strip() for cell in text[1:-1].split("|")]


def markdown_table(text: str) -> dict[str, Any] | None:
    """The ``key -> value`` rows of a two-column markdown table, values typed; ``None`` when
    ``text`` is no such table (a header row, a rule row of dashes, then the rows).

    Rows whose key is no config key (``[A-Za-z0-9_.-/]+``) or that have more than two cells
    are left out. Values stay text: :func:`goggles_io.runs.compare.typed` types them.
    """
    lines = [line for line in str(text).splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    head, rule = _cells(lines[0]), _cells(lines[1])
    if head is None or rule is None or len(head) != 2 or len(rule) != 2:
        return None
    if not all(_RULE.match(cell) for cell in rule):
        return None
    found: dict[str, Any] = {}
    for line in lines[2:]:
        cells = _cells(line)
        if cells is None or len(cells) != 2 or not _KEY.match(cells[0]):
            continue
        found[cells[0]] = cells[1]
    return found


def tfevents_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The hyperparameters the run's event files hold (a ``hyperparameters`` text table, the
    ``hparams`` plugin's session values), or ``{}``. Never raises for a damaged file."""
    from goggles_io.runs.tfevents import missing_reader, tfevents_files

    base = Path(run_dir)
    files = tfevents_files(base)
    if not files or missing_reader():
        return {}
    found: dict[str, Any] = {}
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        got = _cache.get(key)
        if got is None:
            got = _read(base, path)
            _cache[key] = got
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
        for name, value in got.items():
            found.setdefault(name, value)
    return found


def _read(base: Path, path: Path) -> dict[str, Any]:
    from tensorboard.compat.proto.event_pb2 import Event

    from goggles_io.runs.tfevents import read_records

    try:
        with open_inside(base, path) as fh:
            records, _, _ = read_records(fh, 0, MAX_SMALL_FILE_BYTES)
    except OSError:
        return {}
    found: dict[str, Any] = {}
    for raw in records:
        try:
            event = Event.FromString(raw)
        except Exception:  # a DecodeError: damaged, counted by the metrics reader
            continue
        for value in event.summary.value:
            plugin = value.metadata.plugin_data.plugin_name
            if plugin == "text" and value.tag in HPARAMS_TAGS:
                for text in value.tensor.string_val[:1]:
                    table = markdown_table(text.decode("utf-8", errors="replace"))
                    found.update(table or {})
            elif plugin == "hparams":
                found.update(_session_hparams(value.metadata.plugin_data.content))
    return found


def _session_hparams(content: bytes) -> dict[str, Any]:
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    try:
        data = HParamsPluginData.FromString(content)
    except Exception:  # a DecodeError
        return {}
    if not data.HasField("session_start_info"):
        return {}
    found: dict[str, Any] = {}
    for name, value in data.session_start_info.hparams.items():
        kind = value.WhichOneof("kind")
        if kind in ("number_value", "string_value", "bool_value") and _KEY.match(name):
            number = getattr(value, kind)
            found[name] = int(number) if kind == "number_value" and number.is_integer() else number
    return found
