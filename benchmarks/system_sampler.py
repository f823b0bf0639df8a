"""What the run's system sampler costs, and its figures beside ``ps`` and ``/proc`` (issue 43).

Run: ``python3 benchmarks/system_sampler.py [--samples 500] [--seconds 10]``.

Cost: the sampler's own thread CPU time (``time.thread_time``) per sample, for this process
with 0, 4 and 16 sleeping children (its walk of the process tree reads every ``/proc/<pid>``
of the machine, so the machine's process count is printed too), and as a real ``RunContext``
sampling every 0.5 s for ``--seconds`` (its ``run.kv`` ``system_sampler_cpu_s``). "per hour"
is the CPU seconds an hour of sampling at the default 5 s costs; the budget is 0.5 % of a
core (18 CPU seconds an hour).

Beside ps and /proc: a child holding 64 MiB and burning CPU, with a grandchild holding 8 MiB
that burns too; the sampler's RSS, process count and CPU % over ``--seconds`` next to /proc's
(``VmRSS``; ``utime + stime + cutime + cstime``, 10 ms ticks) and ps's (``rss``, ``cputimes``
in whole seconds) for the same processes at the same moments.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE.parent / "tests"))

from goggles_io.runs import RunContext, read_kv
from goggles_io.runs.system import DEFAULT_INTERVAL_S, SystemSampler

BURNER = """
import subprocess, sys, time
hold = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(hold), 4096):
    hold[i] = 1
if sys.argv[2] == "child":
    kid = subprocess.Popen([sys.executable, "-c", sys.argv[3], "8", "leaf", ""])
print("ready", flush=True)
while True:
    x = sum(range(20000))
"""


def tree(pid: int) -> list[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(
                    Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]
                )
            except (OSError, ValueError, IndexError):
                continue
    found, grew = {pid}, True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in found and child not in found:
                found.add(child)
                grew = True
    return sorted(found)


def proc_figures(pids: list[int]) -> tuple[float, float]:
    """(RSS MiB, CPU seconds) of ``pids`` from /proc."""
    rss, ticks = 0, 0
    for pid in pids:
        try:
            rss += next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                        if line.startswith("VmRSS:"))  # fmt: skip
            ticks += sum(
                int(f)
                for f in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11:15]
            )
        except (OSError, StopIteration):
            continue
    return rss / 1024, ticks / os.sysconf("SC_CLK_TCK")


def ps_figures(pids: list[int]) -> tuple[float, float]:
    """(RSS MiB, CPU seconds) of ``pids`` from ``ps -o rss=,cputimes=``."""
    out = subprocess.run(["ps", "-o", "rss=,cputimes=", "-p", ",".join(map(str, pids))],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return sum(int(r[0]) for r in rows) / 1024, float(sum(int(r[1]) for r in rows))


def per_sample_ms(children: int, samples: int) -> float:
    kids = [
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        for _ in range(children)
    ]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sampler = SystemSampler(tmp)
            sampler.sample(write=False)
            t0 = time.thread_time()
            for _ in range(samples):
                sampler.sample()
            return (time.thread_time() - t0) / samples * 1000
    finally:
        for kid in kids:
            kid.kill()
            kid.wait(30)


def run_context_cost(seconds: float) -> tuple[int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        run = RunContext(project="bench", driver="benchmarks/system_sampler.py", slug="cost", root=tmp,
                         system_metrics=True, system_interval_s=0.5)  # fmt: skip
        time.sleep(seconds)
        run.close()
        kv = read_kv(run.dir / "run.kv")
    return int(kv["system_samples"]), float(kv["system_sampler_cpu_s"])


def beside(seconds: float) -> None:
    proc = subprocess.Popen([sys.executable, "-c", BURNER, "64", "child", BURNER], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        while len(tree(proc.pid)) < 2:
            time.sleep(0.05)
        with tempfile.TemporaryDirectory() as tmp:
            sampler = SystemSampler(tmp, pid=proc.pid)
            pids = tree(proc.pid)
            sampler.sample(write=False)
            p0, s0, t0 = proc_figures(pids), ps_figures(pids), time.time()
            time.sleep(seconds)
            got = sampler.sample()
            p1, s1, t1 = proc_figures(pids), ps_figures(pids), time.time()
        wall = t1 - t0
        print(
            f"\n# beside ps and /proc: a child (64 MiB, burning CPU) and its grandchild (8 MiB, burning), over {wall:.1f} s"
        )
        print("| figure | sampler | /proc | ps |")
        print("|---|---|---|---|")
        print(f"| processes | {got['system/procs']:.0f} | {len(pids)} | {len(pids)} |")
        print(f"| RSS (MiB) | {got['system/rss_mib']:.1f} | {p1[0]:.1f} | {s1[0]:.1f} |")
        print(f"| CPU (% of a core) over the interval | {got['system/cpu_pct']:.1f} | {100 * (p1[1] - p0[1]) / wall:.1f} | "
              f"{100 * (s1[1] - s0[1]) / wall:.0f} (whole seconds) |")  # fmt: skip
        print(
            f"| threads | {got['system/threads']:.0f} | {sum(int(Path(f'/proc/{p}/stat').read_text().rsplit(')', 1)[1].split()[17]) for p in pids)} | |"
        )
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    machine = sum(1 for e in os.listdir("/proc") if e.isdigit())
    print(
        f"# the sampler's own CPU per sample (thread CPU time; {machine} processes on this machine)"
    )
    print("| tree | per sample | CPU per hour at 5 s | % of a core at 5 s |")
    print("|---|---|---|---|")
    worst = 0.0
    for children in (0, 4, 16):
        ms = per_sample_ms(children, args.samples)
        hour = ms / 1000 * 3600 / DEFAULT_INTERVAL_S
        worst = max(worst, hour)
        print(
            f"| this process + {children} children | {ms:.2f} ms | {hour:.2f} s | {100 * ms / 1000 / DEFAULT_INTERVAL_S:.3f} % |"
        )
    samples, cpu = run_context_cost(args.seconds)
    hour = cpu / max(samples, 1) * 3600 / DEFAULT_INTERVAL_S
    worst = max(worst, hour)
    print(f"| RunContext, every 0.5 s for {args.seconds:.0f} s: {samples} samples, {cpu * 1000:.0f} ms in all | "
          f"{cpu / max(samples, 1) * 1000:.2f} ms | {hour:.2f} s | {100 * hour / 3600:.3f} % |")  # fmt: skip
    beside(args.seconds)
    ok = worst <= 18.0
    print(
        f"\n{'PASS' if ok else 'FAIL'}: at most 0.5 % of a core (18 CPU seconds an hour) at the default 5 s"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
