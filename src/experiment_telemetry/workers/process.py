"""The worker process: ``python -m experiment_telemetry.workers.process``, driven over its pipes.

The experiment writes one JSON object per line on the worker's stdin: first the setup
(``worker``, ``runtime`` as a ``RuntimeSpec`` dict, ``levels``, ``scope``, ``flush_timeout_s``),
then commands: ``{"op": "episode", "episode", "kwargs", "reload"}``, ``{"op": "dump"}``,
``{"op": "load", "memory"}``. Replies go, one JSON line each, on the original stdout, which the
worker keeps for itself: fd 1 is pointed at stderr, so a ``print`` in runtime code cannot
corrupt the protocol. EOF on stdin ends the worker after ``goggles_io.finish()``.

An episode gets two replies (ADR 0075): ``ran`` as soon as its end marker is queued (the worker
is free for the next command), then ``done`` from the flusher thread once ``goggles_io.flush``
returned (the host holds every event of it). The wait for the host no longer idles the worker:
the next episode runs while the last one is flushed. ``done`` replies keep the episodes' order.
After a learning episode (``reload`` false) the worker waits for its ``done`` before it reads
the next command: a learning episode cannot be run again on another worker.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import IO, Any

__all__ = ["main"]


class _Replies:
    """The reply pipe, written whole line by whole line from the main and the flusher thread."""

    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._lock = threading.Lock()

    def __call__(self, message: dict[str, Any]) -> None:
        line = json.dumps(message) + "\n"
        with self._lock:
            self._out.write(line)
            self._out.flush()


_Flush = tuple[dict[str, Any], threading.Event | None]


def _flusher(
    todo: queue.SimpleQueue[_Flush | None],
    flush: Callable[[float], bool],
    reply: _Replies,
    timeout_s: float,
) -> None:
    """Flush after each episode the main thread ran, in order, and say ``done`` for it (then
    set its event, where the main thread waits for it)."""
    while (item := todo.get()) is not None:
        ran, flushed_event = item
        try:
            flushed = flush(timeout_s)
        except Exception:  # a client that cannot flush: the experiment waits, bounded
            flushed = False
        reply({**ran, "op": "done", "flushed": flushed})
        if flushed_event is not None:
            flushed_event.set()


def main() -> int:
    """Serve one experiment until its stdin closes; return the exit status."""
    reply = _Replies(os.fdopen(os.dup(1), "w", encoding="utf-8"))
    os.dup2(2, 1)  # runtime prints go to stderr; the protocol keeps the real stdout
    sys.stdout = sys.stderr
    setup = json.loads(sys.stdin.readline() or "null")
    if not isinstance(setup, dict):
        return 2

    import goggles_io
    from experiment_telemetry.workers.forwarder import EventForwarder
    from experiment_telemetry.workers.spec import RuntimeSpec
    from runtime_telemetry import configure

    configure(setup.get("levels") or {"telemetry": "INFO"})
    forwarder = EventForwarder(setup["scope"], int(setup["worker"])).subscribe(
        "telemetry", "snapshots"
    )
    spec = RuntimeSpec.from_dict(setup["runtime"])
    flush_timeout_s = float(setup.get("flush_timeout_s", 30.0))
    runtime = spec.build()
    method = getattr(runtime, spec.episode_method)
    base: Any = None
    load_error: str | None = None  # a memory that failed to load fails the episodes after it
    flushes: queue.SimpleQueue[_Flush | None] = queue.SimpleQueue()
    flusher = threading.Thread(
        target=_flusher,
        args=(flushes, goggles_io.flush, reply, flush_timeout_s),
        name="experiment:worker-flusher",
        daemon=True,
    )
    flusher.start()
    reply({"op": "ready", "pid": os.getpid()})
    for line in sys.stdin:
        message = json.loads(line)
        op = message.get("op")
        if op == "episode":
            episode = int(message["episode"])
            error = None
            start = time.time()
            forwarder.begin(episode)
            try:
                if message.get("reload") and load_error is not None:
                    error = f"the shared memory did not load:\n{load_error}"
                else:
                    if message.get("reload") and base is not None:
                        runtime.load_memory(base)
                    method(**message.get("kwargs", {}))
            except Exception:
                error = traceback.format_exc()
            sent = forwarder.end()
            ran = {"op": "ran", "episode": episode, "start": start, "sent": sent, "error": error}
            reply(ran)
            if message.get("reload"):
                flushes.put((ran, None))
            else:  # a learning episode cannot run again elsewhere: flushed before the next
                flushed_event = threading.Event()
                flushes.put((ran, flushed_event))
                flushed_event.wait()
        elif op == "dump":
            try:
                reply({"op": "memory", "memory": runtime.dump_memory()})
            except Exception:
                reply({"op": "memory", "error": traceback.format_exc()})
        elif op == "load":
            base = message["memory"]
            try:
                runtime.load_memory(base)
                load_error = None
            except Exception:
                load_error = traceback.format_exc()
        else:
            reply({"op": "error", "error": f"unknown op {op!r}"})
    flushes.put(None)
    flusher.join()
    forwarder.close()
    goggles_io.finish()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        # Ctrl-C reaches the whole foreground process group: the experiment reports the
        # interrupt once; a worker leaves quietly (its unfinished episode is reported lost).
        sys.exit(130)
