"""What differed between runs: their recorded config, typed, side by side.

"Comparing two runs six weeks apart is only possible if the thing that differed was recorded"
(the logging guide); this shows what differed. ``config.kv`` stores every value as text, so
values are typed back (``3`` is an int, ``1e-3`` a float, ``true`` a bool) before comparing:
``lr=0.001`` and ``lr=1e-3`` are the same setting. One function serves the dashboard's config
diff and ``telemetry diff RUN RUN...``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from goggles_io._util.kvfile import read_kv

__all__ = ["ConfigDiff", "DiffRow", "diff_configs", "format_diff", "read_config", "typed"]

_CONFIG_FILES = ("metrics.config.kv", "config.kv")  # later files win: the run's own config last
_WORDS = {"true": True, "false": False, "none": None, "null": None}


def typed(text: Any) -> Any:
    """A config value read back from text: int, float, bool or ``None`` when it looks like one.

    Anything else stays the string it was; non-strings are returned as they are.
    """
    if not isinstance(text, str):
        return text
    stripped = text.strip()
    lowered = stripped.lower()
    if lowered in _WORDS:
        return _WORDS[lowered]
    try:
        return int(stripped)
    except ValueError:
        pass
    try:
        value = float(stripped)
    except ValueError:
        return text
    return value if math.isfinite(value) or lowered in ("nan", "inf", "-inf") else text


def read_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """A run directory's recorded config, typed: ``metrics.config.kv`` then ``config.kv``; with
    neither, the hyperparameters of its TensorBoard event files (:mod:`goggles_io.runs.hparams`).

    A missing file adds nothing; an unreadable one (not UTF-8, not a regular file, over
    4 MiB, a symlink out of the run) is skipped, so a damaged file never hides the rest.
    """
    out: dict[str, Any] = {}
    for name in _CONFIG_FILES:
        path = Path(run_dir) / name
        if not path.is_file():
            continue
        try:
            values = read_kv(path, inside=run_dir)
        except (OSError, ValueError):
            continue
        out.update({key: typed(value) for key, value in values.items()})
    if not out:  # a TensorBoard run: the hyperparameters its event files hold
        from goggles_io.runs.hparams import tfevents_config

        out = {key: typed(value) for key, value in tfevents_config(run_dir).items()}
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(a: Any, b: Any) -> bool:
    if _is_number(a) and _is_number(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


@attrs.frozen
class DiffRow:
    """One config key across the compared runs; ``present[i]`` is False where run i lacks it."""

    key: str
    values: tuple[Any, ...]
    present: tuple[bool, ...]
    differs: bool


@attrs.frozen
class ConfigDiff:
    """The config of several runs, one row per key (sorted), differing keys flagged."""

    runs: tuple[str, ...]
    rows: tuple[DiffRow, ...]

    @property
    def differing(self) -> tuple[DiffRow, ...]:
        """Only the keys whose value (or presence) differs between the runs."""
        return tuple(row for row in self.rows if row.differs)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-ready) for the dashboard."""
        return {
            "runs": list(self.runs),
            "rows": [
                {
                    "key": r.key,
                    "values": list(r.values),
                    "present": list(r.present),
                    "differs": r.differs,
                }
                for r in self.rows
            ],
        }


def diff_configs(configs: Mapping[str, Mapping[str, Any]]) -> ConfigDiff:
    """Compare the configs of several runs (``{run name: config}``), typing text values first.

    A key missing from some runs differs; values equal after typing (``"1e-3"`` and ``0.001``)
    do not.
    """
    names = tuple(configs)
    keys = sorted({key for config in configs.values() for key in config})
    rows = []
    for key in keys:
        present = tuple(key in configs[name] for name in names)
        values = tuple(typed(configs[name].get(key)) for name in names)
        shown = [v for v, p in zip(values, present, strict=True) if p]
        differs = not all(present) or any(not _same(shown[0], v) for v in shown[1:])
        rows.append(DiffRow(key=key, values=values, present=present, differs=differs))
    return ConfigDiff(runs=names, rows=tuple(rows))


def _text(value: Any, present: bool) -> str:
    if not present:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else repr(value) if value is None else str(value)


def format_diff(diff: ConfigDiff, *, all_keys: bool = False, width: int = 28) -> str:
    """The diff as a text table: one column per run, differing keys (or all, marked ``*``)."""
    rows: Sequence[DiffRow] = diff.rows if all_keys else diff.differing
    if not rows:
        return f"no config differences between {len(diff.runs)} runs"
    cut = [name if len(name) <= width else "…" + name[-(width - 1) :] for name in diff.runs]
    key_w = max(3, *(len(row.key) for row in rows))
    cells = [[_text(v, p) for v, p in zip(r.values, r.present, strict=True)] for r in rows]
    col_w = [max(len(cut[i]), *(len(c[i]) for c in cells)) for i in range(len(cut))]
    col_w = [min(w, width) for w in col_w]
    lines = [
        "  "
        + "KEY".ljust(key_w)
        + "  "
        + "  ".join(n.ljust(w) for n, w in zip(cut, col_w, strict=True))
    ]
    for row, cell in zip(rows, cells, strict=True):
        mark = "* " if all_keys and row.differs else "  "
        shown = [c if len(c) <= w else c[: w - 1] + "…" for c, w in zip(cell, col_w, strict=True)]
        lines.append(
            mark
            + row.key.ljust(key_w)
            + "  "
            + "  ".join(c.ljust(w) for c, w in zip(shown, col_w, strict=True))
        )
    return "\n".join(line.rstrip() for line in lines)
