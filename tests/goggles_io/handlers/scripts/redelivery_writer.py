"""Helper program for test_redelivered: a file sink that writes until it is SIGKILLed.

Usage: redelivery_writer.py storage|csv DIR. Writes :func:`event` ``0, 1, 2, …`` (the test
rebuilds the same events to redeliver them) and flushes every 7 events, so the file grows
while the test waits, and the kill lands anywhere, a torn line included.
"""

from __future__ import annotations

import sys

import goggles_io as gg


def event(i: int) -> gg.Event:
    """The ``i``-th event: fixed timestamp and pid, so another process can rebuild it."""
    return gg.Event(
        kind=gg.Kind.METRIC,
        scope="global",
        payload={"loss": 1.0 / (i + 1), "acc": i % 3},
        step=i,
        timestamp=1_700_000_000.0 + i / 1000,
        logger="train",
        pid=4242,
        extra={"note": "x" * 40},
    )


def handler(kind: str, folder: str) -> gg.LocalStorageHandler | gg.CsvHandler:
    """The sink under test (the test builds the next one from its ``to_dict()``)."""
    if kind == "csv":
        return gg.CsvHandler(folder, rows_per_batch=4)
    return gg.LocalStorageHandler(folder)


def main() -> None:
    sink = handler(sys.argv[1], sys.argv[2])
    sink.open()
    i = 0
    while True:
        sink.handle(event(i))
        i += 1
        if i % 7 == 0:
            sink.flush()


if __name__ == "__main__":
    main()
