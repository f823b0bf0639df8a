"""Screenshots of the many-runs views for docs/ui.md (issue 43): ``python3 tests/ui_screenshots.py
[OUT_DIR]`` (default ``docs/``; run from the repository root, ``tests/`` is on the path as the
script's own folder). Headless Chromium with the tests' flags (``browser.py``), 1400 x
900, over runs written here: seeds of two algorithms, a hyperparameter sweep with a tensorboardX
run beside it, one curve logged at two densities, a run that sampled its own system metrics,
a run with text blocks and histograms. Look at every file it writes.
"""

from __future__ import annotations

import math
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np

from browser import chromium, wait
from ui_glance_runs import make_run, sweep, write_points
from ui_runs import robo_goggles_run

_HERE = Path(__file__).resolve().parent

SYSTEM_RUN = """
import os, subprocess, sys, time
from goggles_io.runs import RunContext
run = RunContext(project="glance", driver="tests/ui_screenshots.py", slug="system", root=sys.argv[1],
                 system_metrics=True, system_interval_s=0.25)
kid = subprocess.Popen([sys.executable, "-c", "import time\\nt=time.time()\\nwhile time.time()-t<4: sum(range(9999))"])
hold = []
end = time.time() + 10
while time.time() < end:
    hold.append(bytearray(3 << 20))
    with open(os.path.join(run.dir, "scratch.bin"), "ab") as fh:
        fh.write(os.urandom(1 << 20)); fh.flush(); os.fsync(fh.fileno())
    x = sum(range(200000))
    time.sleep(0.05)
kid.wait()
os.remove(os.path.join(run.dir, "scratch.bin"))
run.close()
"""


def seeds_and_algos(root: Path) -> None:
    rng = np.random.default_rng(0)
    for algo, ends, level in (
        ("ppo", (6400, 5000, 4000, 3000), 1000.0),
        ("sac", (6400, 6400, 6400), 700.0),
    ):
        for seed, end in enumerate(ends):
            run = make_run(
                root, f"{algo}-seed{seed}", {"algo": algo, "seed": seed, "lr": 3e-4}, group=algo
            )
            steps = np.arange(0, end + 1, 20)
            sps = (
                level + 60 * seed + 40 * np.sin(steps / 700 + seed) + rng.normal(0, 15, len(steps))
            )
            write_points(run, "charts/SPS", steps.tolist(), sps.tolist())
            scale = 100.0 if (algo, seed) == ("sac", 2) else 1.0  # one member on another scale
            ret = scale * (1 - np.exp(-steps / (1500 + 300 * seed))) * 200 + rng.normal(
                0, 8, len(steps)
            )
            write_points(run, "charts/episodic_return", steps.tolist(), ret.tolist())
            write_points(
                run, "hparam/final_loss", [end], [0.3 + 0.05 * seed + (0.1 if algo == "sac" else 0)]
            )


def tensorboard_run(root: Path) -> None:
    """A tensorboardX log directory with add_hparams (its timestamp folder) beside the sweep."""
    import tensorboardX

    with tensorboardX.SummaryWriter(str(root / "tbx_lr3e-3")) as writer:
        for step in range(0, 200, 10):
            writer.add_scalar("loss", 1.0 / (1 + step / 80), step)
            writer.add_scalar("return", 40 * step / 190, step)
        writer.add_hparams(
            {"lr": 3e-3, "batch": 64, "opt": "adam", "seed": 2}, {"hparam/final_loss": 0.31}
        )


def density(root: Path) -> None:
    def shape(s: float) -> float:
        return math.sin(s / 700.0) + 0.3 * math.sin(s / 250.0)

    rng = np.random.default_rng(1)
    for every, slug in ((100, "every100"), (10, "every10")):
        run = make_run(root, slug, {"log_every": every})
        steps = list(range(0, 20_001, every))
        write_points(run, "train/loss", steps, [shape(s) + rng.normal(0, 0.35) for s in steps])


def media(root: Path) -> None:
    run = robo_goggles_run(root / "media")
    import json

    with open(run / "log.jsonl", "a", encoding="utf-8") as fh:
        for step, text in ((0, "baseline: reward shaping off"), (2, "step 2: reward shaping **on**, "
                           "entropy bonus 0.01\nnext: try a larger batch")):  # fmt: skip
            fh.write(json.dumps({"kind": "text", "scope": "global", "payload": text, "step": step,
                                 "extra.name": "notes", "timestamp": time.time()}) + "\n")  # fmt: skip


def shoot(
    driver: Any, url: str, query: dict[str, Any], out: Path, ready: str, then: str = ""
) -> None:
    driver.get(f"{url}/?{urllib.parse.urlencode(query, doseq=True)}")
    wait(driver, lambda d: d.execute_script("return state.runs.length && state.runs.every(r => r.indexed >= 1)"),
         "runs indexed")  # fmt: skip
    driver.execute_script("refreshView()")
    wait(driver, lambda d: d.execute_script(ready), f"{out.name} ready")
    time.sleep(1.0)  # images and fonts settle
    if then:
        driver.execute_script(then)
        time.sleep(0.5)
    driver.save_screenshot(str(out))
    print(out)


def main() -> int:
    from goggles_io.server.collector import Collector

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else _HERE.parent / "docs"
    drawn = (
        "return [...document.querySelectorAll('#charts .panel')].filter(p => p.uplot).length >= {}"
    )
    with tempfile.TemporaryDirectory(prefix="ui-shots-") as tmp:
        root = Path(tmp)
        seeds_and_algos(root / "seeds")
        sweep(root / "sweep", 40)
        tensorboard_run(root / "sweep")
        density(root / "density")
        media(root / "media")
        subprocess.run(
            [sys.executable, "-c", SYSTEM_RUN, str(root / "system")], check=True, timeout=300
        )
        with chromium() as driver:
            with Collector(run_dirs=[str(root / "seeds")]) as server:
                keys = [r["key"] for r in server_runs(server)]
                shoot(driver, server.url, {"run": keys, "group": "group", "band": "std"},
                      out / "ui-groups.png", drawn.format(3))  # fmt: skip
            with Collector(run_dirs=[str(root / "density")]) as server:
                keys = [r["key"] for r in server_runs(server)]
                shoot(
                    driver,
                    server.url,
                    {"run": keys, "smooth": "0.98"},
                    out / "ui-smoothing.png",
                    drawn.format(1),
                )
            with Collector(run_dirs=[str(root / "sweep")]) as server:
                keys = [r["key"] for r in server_runs(server)][:6]
                shoot(driver, server.url, {"run": keys, "tab": "hparams", "color": "summary.return",
                      "hp": ["config.lr", "config.batch", "config.opt", "summary.loss", "summary.return"],
                      "brush": "0.0001~0.003~config.lr", "hsort": "-summary.return"},
                      out / "ui-hparams.png", "return document.querySelector('#hparams .pc-canvas')")  # fmt: skip
                shoot(driver, server.url, {"run": keys, "col": ["config.lr", "config.batch", "config.opt",
                      "summary.loss", "summary.return", "summary.hparam/final_loss"], "sort": "-summary.return"},
                      out / "ui-runs-table.png", drawn.format(1),
                      "document.querySelector('.table-wrap').scrollLeft = 400")  # fmt: skip
            with Collector(run_dirs=[str(root / "system")]) as server:
                keys = [r["key"] for r in server_runs(server)]
                shoot(
                    driver,
                    server.url,
                    {"run": keys, "q": "system/"},
                    out / "ui-system.png",
                    drawn.format(4),
                )
            with Collector(run_dirs=[str(root / "media")]) as server:
                keys = [r["key"] for r in server_runs(server)]
                media_ready = (
                    "return document.querySelector('#media .text-block') && "
                    "document.querySelectorAll('#media canvas').length >= 4"
                )
                for section, name in (
                    ("histogram", "ui-media-histograms.png"),
                    ("text", "ui-media-text.png"),
                ):
                    shoot(driver, server.url, {"run": keys, "tab": "media"}, out / name, media_ready,
                          f"document.querySelector('#media [data-section={section}]').scrollIntoView()")  # fmt: skip
    return 0


def server_runs(server: Any) -> list[dict[str, Any]]:
    import json
    import urllib.request

    from support import wait_until

    def listed() -> list[dict[str, Any]]:
        with urllib.request.urlopen(server.url + "/api/runs", timeout=30) as reply:
            return list(json.loads(reply.read())["runs"])

    wait_until(lambda: listed() and all(r["indexed"] >= 1 for r in listed()), timeout_s=120)
    return sorted(listed(), key=lambda r: r["name"])


if __name__ == "__main__":
    sys.exit(main())
