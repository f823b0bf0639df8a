"""TensorBoard as the dashboard benchmark's peer: its event files, its server, its first chart.

TensorBoard ships its own event writer (no TensorFlow needed). Its charts are drawn by a
dedicated worker (``chart_worker.js``, WebGL on an OffscreenCanvas), so nothing on the page says
"drawn": a script installed before any page script wraps ``window.Worker`` so that each worker
first wraps the WebGL/2D draw calls, and reports the first draw of a line (>= 100 vertices) over
a ``BroadcastChannel``; the page then takes ``performance.now()`` in the next animation frame.
TensorBoard's CSP forbids the blob: worker this needs, so CSP is bypassed through CDP.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["FIRST_CHART_HOOK", "available", "max_of_first_tag", "start", "write_run"]


def available() -> bool:
    """Whether tensorboard is installed (the ``bench`` extra)."""
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


def write_run(logdir: Path, columns: list[tuple[str, Any]], steps: Any, times: Any) -> None:
    """One run's tfevents: one Event per step holding every metric's value at that step."""
    from tensorboard.compat.proto.event_pb2 import Event
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    logdir.mkdir(parents=True, exist_ok=True)
    writer = EventFileWriter(str(logdir), max_queue_size=10000, flush_secs=30)
    names = [name for name, _ in columns]
    values = [col.tolist() for _, col in columns]
    for i, (step, when) in enumerate(zip(steps.tolist(), times.tolist(), strict=True)):
        summary = Summary(
            value=[
                Summary.Value(tag=n, simple_value=v[i]) for n, v in zip(names, values, strict=True)
            ]
        )
        writer.add_event(Event(wall_time=when, step=int(step), summary=summary))
    writer.close()


def _get(url: str, timeout: float = 5.0, data: bytes | None = None) -> bytes:
    with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=timeout) as reply:
        return reply.read()


def start(logdir: Path, port: int, runs: int, tags: int, last_step: int) -> dict[str, Any]:
    """Start TensorBoard; time its first answer and the moment every run's last step is served."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir), "--host", "127.0.0.1",
         "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    up = loaded = None
    while time.perf_counter() - t0 < 600 and loaded is None:
        try:
            if up is None:
                _get(base + "/data/environment", 1.0)
                up = time.perf_counter() - t0
            found = json.loads(_get(base + "/data/plugin/scalars/tags"))
            if len(found) >= runs and sum(len(t) for t in found.values()) >= runs * tags:
                tag = max(t for per_run in found.values() for t in per_run)  # read last
                form = urllib.parse.urlencode(
                    [("tag", tag), *(("runs", r) for r in found)]
                ).encode()
                multi = json.loads(_get(base + "/data/plugin/scalars/scalars_multirun", data=form))
                if len(multi) == len(found) and all(
                    v and v[-1][1] >= last_step for v in multi.values()
                ):
                    loaded = time.perf_counter() - t0
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            pass
        time.sleep(0.05)
    return {"proc": proc, "url": base + "/", "up_s": up, "loaded_s": loaded}


def max_of_first_tag(url: str, run: str, tag: str) -> tuple[int, float]:
    """``(points kept, max value)`` TensorBoard serves for one run's tag (its reservoir sample)."""
    query = urllib.parse.urlencode({"run": run, "tag": tag})
    points = json.loads(_get(f"{url}data/plugin/scalars/scalars?{query}"))
    return len(points), max(p[2] for p in points)


_WORKER_HOOK = r"""function () {
  const channel = new BroadcastChannel("bench-first-chart");
  let sent = false;
  const mark = (n) => {
    if (!sent && n >= 100) { sent = true; channel.postMessage(performance.timeOrigin + performance.now()); }
  };
  for (const C of [self.WebGL2RenderingContext, self.WebGLRenderingContext]) {
    if (!C) continue;
    const arrays = C.prototype.drawArrays, elements = C.prototype.drawElements;
    C.prototype.drawArrays = function (m, f, n) { const r = arrays.apply(this, arguments); mark(n); return r; };
    C.prototype.drawElements = function (m, n) { const r = elements.apply(this, arguments); mark(n); return r; };
  }
  const C2 = self.OffscreenCanvasRenderingContext2D;
  if (C2) {
    const stroke = C2.prototype.stroke;
    C2.prototype.stroke = function () { const r = stroke.apply(this, arguments); mark(1000); return r; };
  }
}"""

FIRST_CHART_HOOK = (
    r"""(() => {
  const RealWorker = window.Worker;
  const hook = HOOK;
  function Hooked(url, options) {
    const absolute = new URL(url, location.href).href;
    const source = "(" + hook.toString() + ")(); importScripts(" + JSON.stringify(absolute) + ");";
    return new RealWorker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })), options);
  }
  Hooked.prototype = RealWorker.prototype;
  window.Worker = Hooked;
  new BroadcastChannel("bench-first-chart").onmessage = (ev) => {
    if (window.__drawn !== undefined) return;
    window.__drawn = ev.data - performance.timeOrigin;
    requestAnimationFrame(() => { window.__firstChartPaint = performance.now(); });
  };
})();"""
).replace("HOOK", _WORKER_HOOK)
"""Installed with CDP ``Page.addScriptToEvaluateOnNewDocument``: sets ``window.__firstChartPaint``."""
