"""The run's system sampler (ADR 0066): on by default in ``RunContext``, off with one argument,
its figures beside ``/proc`` for the same processes, and a process tree that changes under it.

Real processes throughout: a child that burns CPU and holds memory, a grandchild, children
killed at seeded random moments. Waits are conditions (``support.wait_until``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("psutil")

from goggles_io.exceptions import ConfigurationError
from goggles_io.runs import RunContext
from goggles_io.runs.system import SYSTEM_FILE, SystemSampler
from support import wait_until

BURNER = """
import subprocess, sys, time
hold = bytearray(int(sys.argv[1]) << 20)  # resident: every page written
for i in range(0, len(hold), 4096):
    hold[i] = 1
if sys.argv[2] == "child":  # a grandchild holding 8 MiB, burning CPU too
    kid = subprocess.Popen([sys.executable, "-c", sys.argv[3], "8", "leaf", ""])
print("ready", flush=True)
end = time.time() + 600
while time.time() < end:
    x = sum(range(20000))
"""


def lines(run_dir: Path) -> list[dict[str, float]]:
    path = run_dir / SYSTEM_FILE
    if not path.is_file():
        return []
    return [json.loads(line)["payload"] for line in path.read_text().splitlines() if line]


def proc_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, read from /proc directly."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, grew = {pid}, True
    while grew:
        grew = False
        for child, parent in parents.items():
            if parent in tree and child not in tree:
                tree.add(child)
                grew = True
    return sorted(tree)


def proc_rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def proc_cpu_s(pids: list[int]) -> float:
    """utime + stime + cutime + cstime of each process, in seconds (``ps``'s TIME)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / tick


@pytest.fixture
def tree() -> Iterator[subprocess.Popen[str]]:
    """A child holding 64 MiB and burning CPU, with a grandchild holding 8 MiB."""
    proc = subprocess.Popen([sys.executable, "-c", BURNER, "64", "child", BURNER], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        wait_until(lambda: len(proc_tree(proc.pid)) == 2, timeout_s=60)
        yield proc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


class TestRunContext:
    def test_on_by_default_and_off_with_one_argument(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the test suite's switch, a RunContext samples into system/log.jsonl and
        says so in run.kv (samples and the sampler's own CPU); system_metrics=False samples
        nothing."""
        monkeypatch.delenv("TELEMETRY_SYSTEM_METRICS", raising=False)
        on = RunContext(project="p", driver="d", slug="on", root=tmp_path, system_interval_s=0.05)
        off = RunContext(project="p", driver="d", slug="off", root=tmp_path, system_metrics=False)
        try:
            wait_until(lambda: len(lines(on.dir)) >= 3, timeout_s=60)
        finally:
            on.close()
            off.close()
        kv_on = (on.dir / "run.kv").read_text()
        kv_off = (off.dir / "run.kv").read_text()
        first = lines(on.dir)[0]

        assert {"system/cpu_pct", "system/rss_mib", "system/threads", "system/procs",
                "system/disk_read_mib_s", "system/disk_write_mib_s", "system/net_recv_mib_s",
                "system/net_sent_mib_s", "system/sampler_cpu_s"} <= set(first)  # fmt: skip
        assert first["system/rss_mib"] > 1 and first["system/procs"] >= 1
        assert "system_metrics=on" in kv_on and "system_sampler_cpu_s=" in kv_on
        assert "system_metrics=off" in kv_off and not (off.dir / "system").exists()

    def test_environment_switch_and_a_bad_value(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """TELEMETRY_SYSTEM_METRICS=0 turns the default off; a value that is no switch is a
        clear error naming the variable; a bad interval too."""
        monkeypatch.setenv("TELEMETRY_SYSTEM_METRICS", "0")
        run = RunContext(project="p", driver="d", slug="env", root=tmp_path)
        run.close()
        monkeypatch.setenv("TELEMETRY_SYSTEM_METRICS", "maybe")
        with pytest.raises(ConfigurationError, match="TELEMETRY_SYSTEM_METRICS"):
            RunContext(project="p", driver="d", slug="bad", root=tmp_path / "bad")
        with pytest.raises(ConfigurationError, match="system_interval_s"):
            RunContext(
                project="p", driver="d", slug="bad", root=tmp_path / "bad", system_interval_s=0
            )

        assert "system_metrics=off" in (run.dir / "run.kv").read_text()

    def test_run_folder_removed_under_the_sampler(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The run's folder deleted while sampling: the sampler stops with one line on stderr,
        the run goes on and closes without raising."""
        monkeypatch.delenv("TELEMETRY_SYSTEM_METRICS", raising=False)
        run = RunContext(
            project="p", driver="d", slug="gone", root=tmp_path, system_interval_s=0.05
        )
        wait_until(lambda: len(lines(run.dir)) >= 1, timeout_s=60)
        shutil.rmtree(run.dir)
        run.close()  # run.kv cannot be written either: reported, not raised

        assert run.status in ("done", "failed")


class TestBesideProc:
    def test_rss_and_cpu_match_proc_for_the_same_tree(
        self, tmp_path: Path, tree: subprocess.Popen[str]
    ) -> None:
        """Sampling the child's tree: its RSS is /proc's VmRSS summed over the same processes
        (within 5%), its process count is theirs, and its CPU over the interval is what /proc's
        utime+stime (+ reaped children) grew by, as % of a core (within 10 points)."""
        sampler = SystemSampler(tmp_path, pid=tree.pid)
        sampler.sample(write=False)
        cpu0, t0 = proc_cpu_s(proc_tree(tree.pid)), time.time()
        wait_until(lambda: time.time() - t0 >= 2.0, timeout_s=60)
        got = sampler.sample()
        cpu1, t1 = proc_cpu_s(proc_tree(tree.pid)), time.time()
        pids = proc_tree(tree.pid)
        rss = proc_rss_mib(pids)
        expected_cpu = 100 * (cpu1 - cpu0) / (t1 - t0)

        assert got["system/procs"] == len(pids) == 2
        assert abs(got["system/rss_mib"] - rss) <= 0.05 * rss, (got["system/rss_mib"], rss)
        assert got["system/rss_mib"] > 64
        assert abs(got["system/cpu_pct"] - expected_cpu) <= 10, (
            got["system/cpu_pct"],
            expected_cpu,
        )

    def test_children_killed_at_random_moments(self, tmp_path: Path) -> None:
        """Children started and SIGKILLed at seeded random moments while sampling every 10 ms:
        every sample is whole, no rate is negative, and the sampler is still sampling."""
        rng = random.Random(43)
        sampler = SystemSampler(tmp_path, interval_s=0.01)
        sampler.start()
        try:
            for _ in range(12):
                kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
                wait_until(lambda kid=kid: kid.pid in proc_tree(os.getpid()), timeout_s=60)
                end = time.time() + rng.uniform(0.0, 0.1)
                wait_until(lambda end=end: time.time() >= end, timeout_s=60)
                kid.kill()
                kid.wait(30)
            before = sampler.samples
            wait_until(lambda: sampler.samples >= before + 3, timeout_s=60)
        finally:
            sampler.close()
        samples = lines(tmp_path)
        rates = ("system/cpu_pct", "system/disk_read_mib_s", "system/disk_write_mib_s")

        assert len(samples) >= 3
        assert all(s[k] >= 0 for s in samples for k in rates)
