"""Helper program for test_storage: write metric events until killed (SIGKILL, no clean-up).

Usage: storage_writer.py DIR. Steps count up from 0; the buffer is flushed every 50 events so
the file grows while the test waits for it.
"""

from __future__ import annotations

import sys

import goggles_io as gg


def main() -> None:
    handler = gg.LocalStorageHandler(sys.argv[1])
    handler.open()
    step = 0
    while True:
        handler.handle(
            gg.Event(
                kind=gg.Kind.METRIC,
                scope="global",
                payload={"loss": 1.0 / (step + 1)},
                step=step,
                extra={"note": "x" * 40},
            )
        )
        step += 1
        if step % 50 == 0:
            handler.flush()


if __name__ == "__main__":
    main()
