"""What the Monty adapter costs: Monty's run time with and without it, medians of several runs.

Run: ``python3 benchmarks/monty_overhead.py [--runs 5] [--experiment test/evidence_lm/evidence_mujoco ...]``
(needs Monty: docs/monty.md).

Each experiment runs by Monty's docs' ``run.py`` (``python -m experiment_telemetry.monty.run``)
in a fresh process, alternately without the adapter (Monty's ``logging=basic_info_monty_runs``)
and with all three pieces (``logging=split_telemetry +telemetry=split_telemetry
+step_hook=split_telemetry``), so load on the machine falls on both alike. Three times per
run: **experiment**, what Monty's ``main`` reports (``Done running ... in X seconds``: its
episodes, the adapter's work inside them, and its run's opening and closing), **process**, the
whole command (imports and Hydra included), and **cpu**, the process's user + system CPU
seconds (threads included), which other load on a shared machine disturbs far less than wall
time. Prints the medians side by side and the ratio; the goal is at most 2 % more with the
adapter on.

``--breakdown`` also runs each experiment once with the adapter's entry points wrapped in
timers (the step hook, the stats handler's ``report_episode``, the telemetry handler's
``emit``, and the run's closing, which comes after Monty's run, at exit), and prints the time
spent inside them beside Monty's experiment time: the adapter's own share, which other load on
the machine hardly moves.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXPERIMENTS = ("test/evidence_lm/evidence_mujoco", "test/graph_learning/feature_pred_mujoco")
WITHOUT = ("logging=basic_info_monty_runs",)
WITH = ("logging=split_telemetry", "+telemetry=split_telemetry", "+step_hook=split_telemetry")
GOAL = 1.02
_DONE = re.compile(r"Done running .* in ([0-9.]+) seconds")


def run_once(
    experiment: str, overrides: tuple[str, ...], logs: Path, name: str
) -> tuple[float, float]:
    """(experiment seconds as Monty reports them, process seconds)."""
    env = dict(os.environ, MUJOCO_GL="egl", WANDB_MODE="disabled", MONTY_LOGS=str(logs),
               MONTY_MODELS=str(logs / "models"), MONTY_DATA=str(logs / "data"),
               WANDB_DIR=str(logs / "wandb"))  # fmt: skip
    argv = [sys.executable, "-m", "experiment_telemetry.monty.run", f"experiment={experiment}",
            *overrides, f"experiment.config.logging.run_name={name}"]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=900)
    elapsed = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    found = _DONE.findall(done.stdout + done.stderr)
    if done.returncode != 0 or not found:
        tail = (done.stdout + done.stderr)[-3000:]
        raise SystemExit(f"{experiment} {' '.join(overrides)} failed ({done.returncode}):\n{tail}")
    return float(found[-1]), elapsed, cpu


_TIMED = r"""
import atexit, sys, time
spent = {}
atexit.register(lambda: print("ADAPTER", repr(spent), flush=True))  # runs after the run closed
from experiment_telemetry.monty import _session, handler, hook, telemetry
def timed(owner, name, label):
    method = getattr(owner, name)
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - began
    setattr(owner, name, wrapper)
timed(hook.StepHook, "__call__", "step hook")
timed(handler.StatsHandler, "report_episode", "report_episode")
timed(telemetry.TelemetryHandler, "emit", "telemetry emit")
timed(_session.Session, "close", "closing the run")
from experiment_telemetry.monty.run import main
sys.argv[0] = "run"
main()
"""


def breakdown(experiment: str, logs: Path) -> tuple[float, dict[str, float]]:
    """(Monty's experiment seconds, seconds inside each adapter entry point) of one run."""
    env = dict(os.environ, MUJOCO_GL="egl", WANDB_MODE="disabled", MONTY_LOGS=str(logs),
               MONTY_MODELS=str(logs / "models"), MONTY_DATA=str(logs / "data"))  # fmt: skip
    argv = [sys.executable, "-c", _TIMED, f"experiment={experiment}", *WITH,
            "experiment.config.logging.run_name=breakdown"]  # fmt: skip
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=900)
    out = done.stdout + done.stderr
    found, spent = _DONE.findall(out), re.findall(r"ADAPTER (\{.*\})", out)
    if done.returncode != 0 or not found or not spent:
        raise SystemExit(f"{experiment} (timed) failed ({done.returncode}):\n{out[-3000:]}")
    import ast

    return float(found[-1]), ast.literal_eval(spent[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per experiment and setting")
    parser.add_argument("--experiment", action="append", help="Monty experiment (repeatable)")
    parser.add_argument("--breakdown", action="store_true", help="also time the adapter's own code")
    args = parser.parse_args()
    experiments = tuple(args.experiment or EXPERIMENTS)
    print(f"Monty with and without the adapter: medians of {args.runs} runs each, alternating")
    print(f"{'experiment':<40} {'time':<11} {'without':>9} {'with':>9} {'ratio':>7}")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="monty-overhead-") as root:
        for experiment in experiments:
            samples: dict[bool, list[tuple[float, float, float]]] = {False: [], True: []}
            for i in range(args.runs):
                for adapter in (False, True) if i % 2 == 0 else (True, False):
                    logs = Path(root) / f"{i}-{int(adapter)}"
                    overrides = WITH if adapter else WITHOUT
                    samples[adapter].append(run_once(experiment, overrides, logs, "bench"))
            for index, label in ((0, "experiment"), (1, "process"), (2, "cpu")):
                off = statistics.median(s[index] for s in samples[False])
                on = statistics.median(s[index] for s in samples[True])
                ratio = on / off
                if index == 0:
                    worst = max(worst, ratio)
                print(f"{experiment:<40} {label:<11} {off:>8.2f}s {on:>8.2f}s {ratio:>7.3f}")
        if args.breakdown:
            print(f"\n{'experiment':<40} {'Monty':>8} {'adapter':>8} {'share':>7}  where")
            for experiment in experiments:
                total, spent = breakdown(experiment, Path(root) / "breakdown")
                inside = sum(spent.values())
                where = ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in sorted(spent.items()))
                print(
                    f"{experiment:<40} {total:>7.2f}s {inside:>7.3f}s {inside / total:>6.1%}  {where}"
                )
    verdict = "within" if worst <= GOAL else "ABOVE"
    print(
        f"goal: experiment time with the adapter <= {GOAL:.2f}x without: {verdict} (worst {worst:.3f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
