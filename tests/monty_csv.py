"""Column-by-column comparison of a stats CSV of ours with Monty's own (``BasicCSVStatsHandler``).

Every cell must be equal as text, except ``time`` (wall clock) and the departures listed in
``docs/experiment_telemetry.md``, where the values must still be equal:

- D9: Monty's unresolved pose ``[None, None, None]`` is our empty cell;
- D10: vectors are numpy's text in Monty's CSV (8 digits, padded) and each number's repr in
  ours: equal to numpy's printing precision;
- D15: an evidence LM's ``detected_path`` is one location in Monty's, a path of one in ours;
- D16: Monty's ``possible_object_poses`` is ``get_unique_rotations``' pair; ours its Euler angles.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from pathlib import Path

import numpy as np

__all__ = ["Parity", "compare_csvs", "numbers"]

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_VECTOR_COLUMNS_D16 = {"possible_object_poses"}


def numbers(text: str) -> list[float]:
    """Every number in a cell of numpy or list text."""
    return [float(n) for n in _NUMBER.findall(text)]


def _close(a: list[float], b: list[float]) -> bool:
    return len(a) == len(b) and bool(np.allclose(a, b, rtol=1e-8, atol=1e-8))


def _departure(column: str, monty: str, ours: str) -> str | None:
    """The departure under which ``monty`` and ``ours`` hold the same value, or None."""
    if monty == "[None, None, None]" and ours == "":
        return "D9"
    if column in _VECTOR_COLUMNS_D16 and monty.startswith("(["):
        first = monty[1 : monty.index("], [") + 1] if "], [" in monty else monty
        return "D16" if _close(numbers(first), numbers(ours)) else None
    if column == "detected_path" and ours.startswith("[[") and not monty.startswith("[["):
        return "D15" if _close(numbers(monty), numbers(ours)) else None
    if monty.startswith("[") and ours.startswith("[") and "'" not in monty:
        return "D10" if _close(numbers(monty), numbers(ours)) else None
    return None


class Parity:
    """Per column: cells equal as text, equal under a departure, and different."""

    def __init__(self) -> None:
        self.equal: Counter[str] = Counter()
        self.departed: dict[str, Counter[str]] = {}
        self.different: dict[str, list[tuple[int, str, str]]] = {}
        self.rows = 0
        self.columns = 0
        self.header_equal = True

    @property
    def compared(self) -> int:
        """Cells found equal, as text or under a departure."""
        return sum(self.equal.values()) + sum(sum(c.values()) for c in self.departed.values())

    @property
    def ok(self) -> bool:
        return self.header_equal and not self.different

    def summary(self) -> str:
        lines = [f"{self.rows} rows, header equal: {self.header_equal}"]
        for column in sorted(set(self.equal) | set(self.departed) | set(self.different)):
            parts = [f"{self.equal[column]} equal"]
            parts += [f"{n} {d}" for d, n in sorted(self.departed.get(column, {}).items())]
            if column in self.different:
                row, m, o = self.different[column][0]
                parts.append(f"{len(self.different[column])} DIFFERENT (row {row}: {m!r} vs {o!r})")
            lines.append(f"  {column}: " + ", ".join(parts))
        return "\n".join(lines)


def compare_csvs(monty_csv: Path, ours_csv: Path, *, skip: tuple[str, ...] = ("time",)) -> Parity:
    """Compare ``ours_csv`` with ``monty_csv`` cell by cell (see the module docstring)."""
    with open(monty_csv, newline="", encoding="utf-8") as f:
        monty = list(csv.reader(f))
    with open(ours_csv, newline="", encoding="utf-8") as f:
        ours = list(csv.reader(f))
    parity = Parity()
    parity.header_equal = monty[0] == ours[0]
    parity.rows = len(monty) - 1
    parity.columns = len(monty[0])
    if len(monty) != len(ours):
        parity.different["<rows>"] = [(0, str(len(monty) - 1), str(len(ours) - 1))]
    where = {name: i for i, name in enumerate(ours[0])}
    for number, (m_row, o_row) in enumerate(zip(monty[1:], ours[1:], strict=False), start=1):
        for i, column in enumerate(monty[0]):
            if column in skip:
                continue
            j = where.get(column)
            m, o = m_row[i], (o_row[j] if j is not None else "<no column>")
            if m == o:
                parity.equal[column] += 1
                continue
            found = _departure(column, m, o)
            if found is None:
                parity.different.setdefault(column, []).append((number, m, o))
            else:
                parity.departed.setdefault(column, Counter())[found] += 1
    return parity
