"""Which goggles_io modules one scalar passes, from ``logger.scalar`` to ``metrics.csv``.

Issue 42 counts a scalar's walk in modules and the times it comes back to a module it left.
This script traces one warm scalar through the socket transport with its host in this process
(``GOGGLES_DEDICATED_HOST=0``, so one profiler sees the producer, the host and the lane) and
prints, per thread, the goggles_io modules in the order the calls first entered them, and every
call into a module that had been entered and left before (a "return").

Run: ``python benchmarks/scalar_walk.py`` (a few seconds; a measurement, not a test).
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any


def main() -> int:
    """Trace one scalar and print the walk."""
    tmp = Path(tempfile.mkdtemp(prefix="walk-"))
    os.environ.update(
        GOGGLES_SOCKET=str(tmp / "bus.sock"), GOGGLES_DEDICATED_HOST="0", GOGGLES_TRANSPORT="socket"
    )
    import goggles_io as gg

    calls: dict[str, list[tuple[str, str]]] = {}
    src = str(Path(gg.__file__).parent.parent) + os.sep
    recording = threading.Event()

    def prof(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or not recording.is_set():
            return
        path = frame.f_code.co_filename
        if not path.startswith(src) or "goggles_io" not in path:
            return
        caller = frame.f_back
        back = caller.f_code.co_filename if caller is not None else ""
        module = path[len(src) :]
        calls.setdefault(threading.current_thread().name, []).append(
            (module, back[len(src) :] if back.startswith(src) else "")
        )

    threading.setprofile(prof)  # every thread the bus starts from here on
    sys.setprofile(prof)
    gg.attach(gg.CsvHandler(str(tmp), name="csv", rows_per_batch=1), scopes=["global"])
    logger = gg.get_logger("walk", with_metrics=True)
    for i in range(200):  # warm: imports, the host, the lane, the file
        logger.scalar("loss", float(i), step=i)
    gg.flush()
    csv = next(tmp.rglob("metrics.csv"))
    before = csv.stat().st_size
    recording.set()
    logger.scalar("loss", 1.5, step=1000)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        # the handler writes when the lane hands it the row; the file grows then
        if csv.stat().st_size > before:
            break
        time.sleep(0.01)
    time.sleep(0.3)
    recording.clear()
    sys.setprofile(None)
    threading.setprofile(None)
    gg.finish()
    seen_all: list[str] = []
    for thread, entries in calls.items():
        order: list[str] = []
        returns: list[str] = []
        for module, back in entries:
            if module not in order:
                order.append(module)
            elif back and back != module and order.index(module) < order.index(back):
                returns.append(f"{back} -> {module}")
        print(f"[{thread}] {len(order)} modules: " + ", ".join(order))
        print(
            f"    calls back into a module left before: {len(set(returns))} {sorted(set(returns))}"
        )
        seen_all += [m for m in order if m not in seen_all]
    print(f"all threads: {len(seen_all)} modules")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
