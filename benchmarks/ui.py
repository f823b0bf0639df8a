"""``telemetry ui`` side by side with TensorBoard on the same points, and its memory at 100 M.

Run: ``python3 benchmarks/ui.py [--repeats 3] [--big-points 100000000]`` (``--big-points 0``
skips the 100 M row; TensorBoard columns need the ``bench`` extra and are skipped without it).

Data: the same values both ways: 10 metrics x 100,000 steps (1 M points; ``sin`` curves and one
+3.0 spike at step 33,333 of ``m0``) as goggles_io's ``events.jsonl`` and as TensorBoard's
tfevents; 20 runs x 10 metrics x 10,000 steps (20 x 100 k points) the same way.

Per try (medians over ``--repeats``): a fresh server process and a fresh headless Chromium
profile. "server ready": ``Popen`` to the first answer listing every run (``/api/runs``;
TensorBoard: ``/data/environment``). "all data served": every point indexed (TensorBoard: every
run's last step served; it keeps 1,000 samples per tag). "first chart": navigation start to the
first line drawn on a canvas (ours: uPlot's first draw hook; TensorBoard: its chart worker's
first WebGL line, see ``_tensorboard.py``), first with the empty cache of a fresh profile, then
the median of 3 reloads. RSS: the server's whole process tree (TensorBoard's data server too)
after the page loads. Our index is kept in a cache directory: "kept" rows reuse one built by an
earlier start, "cold" rows start from an empty one (the first start on a finished log).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent / "tests"))  # browser.py: the tests' Chromium launcher
sys.path.insert(0, str(_HERE))

import _tensorboard as tb

TARGETS = {"first_cold": 0.5, "reload": 0.2, "ready_20": 0.5, "rss_1m": 100.0, "rss_big": 250.0}
SPIKE_STEP = 33_333


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_rss_mb(pid: int) -> float:
    """VmRSS summed over ``pid`` and all its descendants."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {pid}, True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    total = 0
    for member in tree:
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def columns(
    steps: int, metrics: int, seed: int = 0
) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    step = np.arange(steps, dtype=np.float64)
    cols = []
    for i in range(metrics):
        y = np.sin(step / 5000.0 + i + seed)
        if i == 0 and steps > SPIKE_STEP:
            y[SPIKE_STEP] += 3.0
        cols.append((f"m{i}", y))
    return step, cols


def write_ours(run_dir: Path, steps: int, metrics: int, seed: int = 0) -> None:
    """A run directory with ``events.jsonl`` in LocalStorageHandler's line format."""
    from goggles_io.runs import RunContext

    ctx = RunContext(
        project="bench", driver="benchmarks/ui.py", slug=run_dir.name, root=run_dir.parent
    )
    ctx.close()
    _step, cols = columns(steps, metrics, seed)
    t0 = time.time() - steps * 1e-3
    names = [json.dumps(name) for name, _ in cols]
    values = [c.tolist() for _, c in cols]
    with open(ctx.dir / "events.jsonl", "w", encoding="utf-8") as fh:
        for i in range(steps):
            payload = ", ".join(f"{n}: {v[i]!r}" for n, v in zip(names, values, strict=True))
            fh.write(f'{{"kind": "metric", "scope": "global", "step": {i}, "timestamp": {t0 + i * 1e-3!r}, '
                     f'"logger": "bench", "extra": {{}}, "payload": {{{payload}}}}}\n')  # fmt: skip
    if ctx.dir != run_dir:
        ctx.dir.rename(run_dir)


def write_tensorboard(logdir: Path, steps: int, metrics: int, seed: int = 0) -> None:
    step, cols = columns(steps, metrics, seed)
    tb.write_run(logdir, cols, step, time.time() - steps * 1e-3 + step * 1e-3)


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())


def start_ours(root: Path, index_dir: Path, runs: int, points: int) -> dict[str, Any]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_HERE.parent / "src"), *sys.path])}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "experiment_telemetry", "ui", str(root), "--port", str(port),
                             "--index-dir", str(index_dir)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    ready = loaded = None
    peak = 0.0
    while time.perf_counter() - t0 < 1800 and loaded is None:
        try:
            listed = get_json(base + "/api/runs")["runs"]
            if ready is None and len(listed) >= runs:
                ready = time.perf_counter() - t0
            if sum(sum(r["metrics"].values()) for r in listed) >= points:
                loaded = time.perf_counter() - t0
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            pass
        peak = max(peak, tree_rss_mb(proc.pid))
        time.sleep(0.02 if ready is None else 0.2)
    return {"proc": proc, "url": base + "/", "up_s": ready, "loaded_s": loaded, "peak_mb": peak}


def first_chart(driver: Any, url: str, reloads: int) -> tuple[float, float]:
    """(empty-cache first chart, median reload first chart) in seconds from navigation start."""
    from selenium.webdriver.support.ui import WebDriverWait

    marks = []
    for _ in range(reloads + 1):
        driver.get(url)
        WebDriverWait(driver, 300, poll_frequency=0.02).until(
            lambda d: d.execute_script("return window.__firstChartPaint")
        )
        marks.append(driver.execute_script("return window.__firstChartPaint") / 1000.0)
    return marks[0], statistics.median(marks[1:])


def try_ours(
    root: Path, index_dir: Path, runs: int, points: int, page: str | None
) -> dict[str, Any]:
    from browser import chromium

    got = start_ours(root, index_dir, runs, points)
    try:
        if page is not None:
            with chromium() as driver:
                got["cold_s"], got["reload_s"] = first_chart(driver, got["url"] + page, 3)
                got["rss_mb"] = tree_rss_mb(got["proc"].pid)
                m0 = get_json(got["url"] + "api/series?" + page.lstrip("?") + "&metric=m0&n=1000")
                got["spike"] = max(
                    v for s in m0["series"].values() for v in s["y"] if v is not None
                )
        else:
            got["rss_mb"] = tree_rss_mb(got["proc"].pid)
    finally:
        got["proc"].terminate()
        got["proc"].wait(30)
    return got


def try_tensorboard(logdir: Path, runs: int, tags: int, last: int, page: bool) -> dict[str, Any]:
    from browser import chromium

    got = tb.start(logdir, free_port(), runs, tags, last)
    try:
        if page:
            with chromium() as driver:
                driver.execute_cdp_cmd("Page.setBypassCSP", {"enabled": True})
                driver.execute_cdp_cmd(
                    "Page.addScriptToEvaluateOnNewDocument", {"source": tb.FIRST_CHART_HOOK}
                )
                got["cold_s"], got["reload_s"] = first_chart(driver, got["url"], 3)
            got["kept"], got["spike"] = tb.max_of_first_tag(got["url"], "run0", "m0")
        got["rss_mb"] = tree_rss_mb(got["proc"].pid)
    finally:
        got["proc"].terminate()
        got["proc"].wait(30)
    return got


def median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def cell(value: Any, unit: str = "s") -> str:
    if value is None:
        return "–"
    return f"{value:.2f} {unit}" if unit == "s" else f"{value:.0f} {unit}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--big-points", type=int, default=100_000_000, help="0 skips the 100 M row")
    parser.add_argument("--work", help="keep the data here (default: a temporary directory)")
    args = parser.parse_args()
    with_tb = tb.available()
    with tempfile.TemporaryDirectory(prefix="ui-bench-") as tmp:
        work = Path(args.work or tmp)
        one, many = work / "one", work / "many"
        write_ours(one / "run0", 100_000, 10)
        for r in range(20):
            write_ours(many / f"run{r}", 10_000, 10, seed=r)
        if with_tb:
            write_tensorboard(work / "tb_one" / "run0", 100_000, 10)
            for r in range(20):
                write_tensorboard(work / "tb_many" / f"run{r}", 10_000, 10, seed=r)
        page = "?run=dir:run0"
        rows: dict[str, list[dict[str, Any]]] = {
            k: [] for k in ("kept", "cold", "tb", "many", "tb_many")
        }
        kept_index = work / "index-kept"
        try_ours(one, kept_index, 1, 1_000_000, None)  # builds the kept index, untimed
        for repeat in range(args.repeats):
            rows["kept"].append(try_ours(one, kept_index, 1, 1_000_000, page))
            rows["cold"].append(try_ours(one, work / f"index-cold-{repeat}", 1, 1_000_000, page))
            rows["many"].append(try_ours(many, work / f"index-many-{repeat}", 20, 2_000_000, None))
            if with_tb:
                rows["tb"].append(try_tensorboard(work / "tb_one", 1, 10, 99_999, True))
                rows["tb_many"].append(try_tensorboard(work / "tb_many", 20, 10, 9_999, False))
            print(f"# repeat {repeat}: " + json.dumps({k: {m: round(v, 3) for m, v in r[-1].items()
                  if isinstance(v, float)} for k, r in rows.items() if r}), file=sys.stderr)  # fmt: skip
        big = None
        if args.big_points:
            steps = args.big_points // 10
            write_ours(work / "big" / "run0", steps, 10)
            big = try_ours(work / "big", work / "index-big", 1, steps * 10, page)
    print(
        f"# telemetry ui vs TensorBoard {tb_version() if with_tb else '(not installed)'}; medians of {args.repeats}"
    )
    print(
        "| 1M points (10 x 100k), one run | server ready | all data served | first chart, empty cache | reload: first chart | server RSS |"
    )
    print("|---|---|---|---|---|---|")
    for label, key in (
        ("telemetry ui, kept index", "kept"),
        ("telemetry ui, cold index", "cold"),
        ("TensorBoard", "tb"),
    ):
        r = rows[key]
        if r:
            print(f"| {label} | {cell(median(r, 'up_s'))} | {cell(median(r, 'loaded_s'))} | {cell(median(r, 'cold_s'))} | "
                  f"{cell(median(r, 'reload_s'))} | {cell(median(r, 'rss_mb'), 'MB')} |")  # fmt: skip
    print(
        "| 20 runs x 100k points | server ready | all data served | | | server RSS (peak while reading) |"
    )
    for label, key in (("telemetry ui, cold index", "many"), ("TensorBoard", "tb_many")):
        r = rows[key]
        if r:
            peak = f" ({cell(median(r, 'peak_mb'), 'MB')})" if median(r, "peak_mb") else ""
            print(
                f"| {label} | {cell(median(r, 'up_s'))} | {cell(median(r, 'loaded_s'))} | | | {cell(median(r, 'rss_mb'), 'MB')}{peak} |"
            )
    spike = rows["kept"][0]["spike"]
    print(
        f"spike +3.0 at step {SPIKE_STEP} of m0 in the full-range answer: telemetry ui max {spike:.3f}",
        end="",
    )
    if rows["tb"]:
        print(
            f"; TensorBoard keeps {rows['tb'][0]['kept']} of 100000 points, max {rows['tb'][0]['spike']:.5f}"
        )
    else:
        print()
    if big is not None:
        print(f"| {args.big_points:,} points, one run | server ready {cell(big['up_s'])} | indexed in {cell(big['loaded_s'])} "
              f"| first chart {cell(big['cold_s'])} | reload {cell(big['reload_s'])} | RSS {cell(big['rss_mb'], 'MB')} "
              f"(peak while indexing {cell(big['peak_mb'], 'MB')}); spike max {big['spike']:.3f} |")  # fmt: skip
    checks = {
        "first chart, empty cache (kept index) <= 0.5 s": median(rows["kept"], "cold_s")
        <= TARGETS["first_cold"],
        "reload first chart <= 0.2 s": median(rows["kept"], "reload_s") <= TARGETS["reload"],
        "server ready, 20 runs x 100k <= 0.5 s": median(rows["many"], "up_s")
        <= TARGETS["ready_20"],
        "server RSS at 1M <= 100 MB": median(rows["kept"], "rss_mb") <= TARGETS["rss_1m"],
    }
    if big is not None:
        worst = max(big["peak_mb"], big["rss_mb"])  # while indexing, and after the page's queries
        checks["server RSS at 100M <= 250 MB (worst of indexing and serving)"] = (
            worst <= TARGETS["rss_big"]
        )
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    return 0 if all(checks.values()) else 1


def tb_version() -> str:
    import tensorboard

    return str(tensorboard.__version__)


if __name__ == "__main__":
    sys.exit(main())
