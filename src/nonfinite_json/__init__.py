"""Strict JSON (RFC 8259) that keeps NaN and infinities: the one convention of every file we write.

JSON has no NaN or Infinity. A non-finite float is written as the string ``"NaN"``,
``"Infinity"`` or ``"-Infinity"``, and an object at the top of a document (a line of a
``.jsonl`` file, an API answer) lists where it replaced one under ``"_nonfinite"``: a list of
paths of keys and indices from the top, ``[["payload", "loss"], ["values", 3]]``. A reader
turns exactly those strings back into floats, so a logged string ``"NaN"`` stays a string.
A document whose top is a list gets the strings only (there is no object to list them in).

:func:`loads` also reads what was written before the convention: Python's bare ``NaN``,
``Infinity`` and ``-Infinity`` literals become floats.

A leaf package (standard library only): ``runtime_telemetry`` and ``goggles_io``, which may
not import each other, both use it (ADR 0031).
"""

from __future__ import annotations

from nonfinite_json._convention import NONFINITE_KEY, dumps, loads, plain, restore

__all__ = ["NONFINITE_KEY", "dumps", "loads", "plain", "restore"]
