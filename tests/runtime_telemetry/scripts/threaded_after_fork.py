"""Fork with a live ThreadedSubscriber; both processes must still deliver their own events.

Prints one JSON line per process: {"who": "parent"|"child", "received": [...], ...}.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

import attrs

from runtime_telemetry import TelemetryEvent, ThreadedSubscriber, configure, get_telemetry


@attrs.frozen(kw_only=True)
class ForkTestTick(TelemetryEvent):
    who: str
    n: int


class Collector(ThreadedSubscriber):
    def __init__(self) -> None:
        super().__init__(queue_size=100)
        self.received: list[str] = []

    def on_event(self, schema: ForkTestTick) -> None:  # type: ignore[override]
        self.received.append(f"{schema.who}:{schema.n}")


def report(who: str, collector: Collector, drained: bool) -> None:
    line = {"who": who, "received": collector.received, "drained": drained}
    print(json.dumps(line), flush=True)


def main() -> int:
    warnings.simplefilter("ignore", DeprecationWarning)  # fork() in a threaded process
    configure({"telemetry": "INFO"})
    telemetry = get_telemetry("fork.script")
    collector = Collector().subscribe()
    telemetry.emit(ForkTestTick(who="parent", n=0))
    collector.flush(timeout=30)

    pid = os.fork()
    if pid == 0:
        telemetry.emit(ForkTestTick(who="child", n=1))
        drained = collector.close(timeout=30)
        report("child", collector, drained)
        os._exit(0)
    telemetry.emit(ForkTestTick(who="parent", n=2))
    drained = collector.close(timeout=30)
    _, status = os.waitpid(pid, 0)
    report("parent", collector, drained)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
