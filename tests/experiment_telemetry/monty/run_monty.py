"""Monty's docs' ``run.py``, plus a plain counting handler put on ``telemetry.tbp.monty`` first.

The handler is how one would naively listen to Monty's telemetry: it counts what reaches it and
writes the count to ``$PLAIN_HANDLER_COUNT`` at exit. The tests show it receives nothing
(Monty's publishers do not propagate, and its logging setup replaces that logger's handlers)
while the adapter's handler, declared in a Hydra telemetry config, receives every event.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


_plain = _Count()
logging.getLogger("telemetry.tbp.monty").addHandler(_plain)
_out = os.environ.get("PLAIN_HANDLER_COUNT")
if _out:
    atexit.register(
        lambda: open(_out, "w", encoding="utf-8").write(json.dumps({"count": _plain.count}))
    )

from tbp.monty.frameworks.run_env import setup_env  # noqa: E402

setup_env()
from tbp.monty.frameworks.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
