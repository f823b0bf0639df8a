"""Run directories for the dashboard's tests, written the way each logger writes them.

``robo_goggles_run`` uses robo-goggles itself when it is installed (the ``bench`` extra) and
otherwise writes its observed layout (``log.jsonl`` with flat ``extra.<key>`` fields, media
``payload`` = the file's relative path, ``images/``, ``histograms/``, ... folders), so the
tests run either way; ``local_storage_run`` uses goggles_io's own ``LocalStorageHandler``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
ROBO_SCRIPT = _HERE / "goggles_io" / "server" / "ui" / "scripts" / "robo_goggles_run.py"
MEDIA_KINDS = ("image", "video", "histogram", "trajectories", "vector_field", "artifact")


def has_robo_goggles() -> bool:
    """Whether ``import goggles`` is robo-goggles (not an alias of goggles_io)."""
    probe = "import goggles, sys; sys.exit(0 if 'goggles_io' not in goggles.__name__ else 1)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              timeout=120).returncode == 0  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False


def robo_goggles_run(out: Path) -> Path:
    """A robo-goggles run directory (no ``run.kv``) with metrics and every media kind."""
    out.mkdir(parents=True, exist_ok=True)
    if has_robo_goggles():
        private = tempfile.mkdtemp(prefix="robo-goggles-")  # it chmods its temp dir as root
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        env.update(TMPDIR=private, GOGGLES_SOCKET=os.path.join(private, "g.sock"))
        try:
            done = subprocess.run([sys.executable, str(ROBO_SCRIPT), str(out)], env=env,
                                  capture_output=True, text=True, timeout=300)  # fmt: skip
        finally:
            shutil.rmtree(private, ignore_errors=True)
        if done.returncode == 0 and (out / "log.jsonl").is_file():
            return out
    return _write_layout(out)


def _line(kind: str, payload: object, step: int, **extra: object) -> str:
    line = {"kind": kind, "scope": "global", "payload": payload, "filepath": "t.py", "lineno": 1,
            "step": step, **{f"extra.{k}": v for k, v in extra.items()}}  # fmt: skip
    return json.dumps(line) + "\n"


def _write_layout(out: Path) -> Path:
    from PIL import Image

    rng = np.random.default_rng(0)
    lines = []
    out.mkdir(parents=True, exist_ok=True)
    for folder in ("images", "videos", "histograms", "trajectories", "vector_fields", "artifacts"):
        (out / folder).mkdir(exist_ok=True)
    for step in range(3):
        lines.append(_line("metric", {"train/loss": 1.0 / (step + 1)}, step))
        Image.fromarray(rng.integers(0, 255, (24, 32, 3), dtype=np.uint8)).save(
            out / f"images/camera_{step}.png"
        )
        lines.append(_line("image", f"images/camera_{step}.png", step, name="camera", format="png"))
        np.save(out / f"histograms/weights_{step}.npy", rng.standard_normal(300) + step)
        lines.append(
            _line("histogram", f"histograms/weights_{step}.npy", step, static=False, name="weights")
        )
        np.save(
            out / f"trajectories/paths_{step}.npy",
            np.cumsum(rng.standard_normal((3, 40, 2)), axis=1),
        )
        lines.append(_line("trajectories", f"trajectories/paths_{step}.npy", step, name="paths"))
        np.save(out / f"vector_fields/flow_{step}.npy", rng.standard_normal((10, 10, 2)))
        lines.append(_line("vector_field", f"vector_fields/flow_{step}.npy", step, name="flow"))
    frames = [Image.fromarray(rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)) for _ in range(6)]
    frames[0].save(out / "videos/rollout_2.gif", save_all=True, append_images=frames[1:], loop=0)
    lines.append(_line("video", "videos/rollout_2.gif", 2, name="rollout", fps=30, format="gif"))
    (out / "artifacts/notes_2.txt").write_text("notes from the run")
    lines.append(_line("artifact", "artifacts/notes_2.txt", 2, name="notes", format="txt"))
    (out / "log.jsonl").write_text("".join(lines))
    return out


def append_metric(
    run_dir: Path, name: str, value: float, step: int, when: float | None = None
) -> None:
    """One metric line as goggles_io's LocalStorageHandler writes it to ``events.jsonl``."""
    record = {"kind": "metric", "scope": "global", "step": step,
              "timestamp": time.time() if when is None else when, "logger": "t", "extra": {},
              "payload": {name: value if value == value else "NaN"}}  # fmt: skip
    if value != value:
        record["_nonfinite"] = [["payload", name]]
    with open(run_dir / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")


def write_alert(run_dir: Path, source: str, metric: str, step: int, message: str) -> None:
    """One metric watcher alert as experiment_telemetry writes it to ``alerts.jsonl``."""
    alert = {"kind": "metric_alert", "version": 1, "timestamp": time.time(), "check": "value_explosion",
             "severity": "error", "source": source, "metric": metric, "step": step, "message": message}  # fmt: skip
    with open(run_dir / "alerts.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(alert) + "\n")
