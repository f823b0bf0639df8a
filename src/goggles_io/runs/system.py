"""What a run cost the machine: a cheap sampler of the run's process and its children (ADR 0066).

Every ``interval_s`` seconds (5 by default; W&B samples every 10-15) a daemon thread reads, for
the process tree rooted at the run's process, the CPU time, resident memory, threads and disk
bytes (psutil, which reads ``/proc`` on Linux), the machine's network bytes (Linux counts none
per process: these are the network namespace's interfaces, loopback left out) and, when NVML
is there (``nvidia-ml-py``), each GPU's utilisation, its memory in use and the tree's share.
Each sample is one metric line of ``<run>/system/log.jsonl``, names under ``system/``, with its
wall time and no step (a sample is not a training step): the dashboard draws them over wall
time in a section of their own, ``telemetry show`` lists their last values.

CPU is counted as ``ps`` counts it, in % of one core: user + system time of every live process
of the tree plus the time of children they reaped, so a worker that ended between two samples
still counts. The sampler measures itself: ``system/sampler_cpu_s`` is its thread's own CPU
time so far, also written to ``run.kv`` as ``system_sampler_cpu_s`` when the run closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from goggles_io._util.report import report

__all__ = ["DEFAULT_INTERVAL_S", "SYSTEM_FILE", "SYSTEM_PREFIX", "SystemSampler", "missing_psutil"]

DEFAULT_INTERVAL_S = 5.0
SYSTEM_PREFIX = "system/"
SYSTEM_FILE = Path("system") / "log.jsonl"
"""Where a run's samples go, relative to its directory (read as one of its event logs)."""
_MIB = float(1 << 20)
_FINAL_MIN_S = 1.0  # a closing sample only when this long has passed since the last one


def missing_psutil() -> str | None:
    """Why the sampler cannot run here (psutil is missing), or ``None``."""
    try:
        import psutil  # noqa: F401
    except ImportError:
        return "system metrics need psutil: pip install psutil"
    return None


class _Gpus:
    """NVML's view of the GPUs, when ``nvidia-ml-py`` is installed and a driver answers."""

    def __init__(self) -> None:
        self.nvml: Any = None
        self.handles: list[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self.nvml = pynvml
        except Exception:  # no package, no driver, no device: no GPU metrics
            self.handles = []

    def sample(self, pids: set[int], out: dict[str, float]) -> None:
        nvml = self.nvml
        for i, handle in enumerate(self.handles):
            try:
                util = nvml.nvmlDeviceGetUtilizationRates(handle)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                procs = [
                    *nvml.nvmlDeviceGetComputeRunningProcesses(handle),
                    *nvml.nvmlDeviceGetGraphicsRunningProcesses(handle),
                ]
            except Exception:  # a device that went away or refuses: skipped this time
                continue
            ours = sum(p.usedGpuMemory or 0 for p in procs if p.pid in pids)
            out[f"system/gpu{i}/util_pct"] = float(util.gpu)
            out[f"system/gpu{i}/mem_used_pct"] = 100.0 * memory.used / max(memory.total, 1)
            out[f"system/gpu{i}/proc_mem_mib"] = ours / _MIB

    def close(self) -> None:
        if self.nvml is not None:
            with contextlib.suppress(Exception):
                self.nvml.nvmlShutdown()


class SystemSampler:
    """Samples the process tree of ``pid`` (this process by default) into ``run_dir``.

    :meth:`start` begins sampling in a daemon thread; :meth:`close` stops it (with one last
    sample when a second or more passed since the previous one). :meth:`sample` takes one
    sample now and returns it (the thread calls it; so can a benchmark).
    """

    def __init__(
        self, run_dir: str | os.PathLike[str], interval_s: float = DEFAULT_INTERVAL_S,
        pid: int | None = None,
    ) -> None:  # fmt: skip
        import psutil

        self.path = Path(run_dir) / SYSTEM_FILE
        self.interval_s = float(interval_s)
        self.samples = 0
        self.cpu_s = 0.0  # the sampler thread's own CPU time
        self._psutil = psutil
        self._root = psutil.Process(os.getpid() if pid is None else pid)
        self._procs: dict[int, Any] = {}
        self._gpus: _Gpus | None = None
        self._last: tuple[float, float, float, float, float, float] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: TextIO | None = None
        self._lock = threading.Lock()

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Take the baseline reading and sample every ``interval_s`` in a daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="run-system-sampler")
            self._thread.daemon = True
            self._thread.start()

    def close(self) -> None:
        """Stop sampling (idempotent); the file is closed, GPUs released."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10.0)

    def _loop(self) -> None:
        began = time.thread_time()
        try:
            self._gpus = _Gpus()
            self.sample(write=False)  # the baseline: rates need a previous reading
            while not self._stop.wait(self.interval_s):
                self.sample()
            if self._last is not None and time.time() - self._last[0] >= _FINAL_MIN_S:
                self.sample()
        except Exception as exc:  # never let the sampler take the run down
            report(f"system metrics stopped: {exc!r}")
        finally:
            self.cpu_s = time.thread_time() - began
            if self._gpus is not None:
                self._gpus.close()
            if self._file is not None:
                with contextlib.suppress(OSError):
                    self._file.close()

    # -- one sample ---------------------------------------------------------------------------
    def _tree(self) -> list[Any]:
        """The root and its descendants, each a cached ``psutil.Process`` (pid reuse is told
        apart by psutil's creation time)."""
        ps = self._psutil
        members = [self._root]
        with contextlib.suppress(ps.Error):
            members += self._root.children(recursive=True)
        live: dict[int, Any] = {}
        for proc in members:
            cached = self._procs.get(proc.pid)
            live[proc.pid] = cached if cached is not None and cached == proc else proc
        self._procs = live
        return list(live.values())

    def _read(self) -> tuple[dict[str, float], tuple[float, float, float, float, float, float]]:
        ps = self._psutil
        cpu = rss = threads = disk_r = disk_w = 0.0
        procs = self._tree()
        pids = set()
        for proc in procs:
            try:
                with proc.oneshot():
                    t = proc.cpu_times()
                    mem = proc.memory_info()
                    n = proc.num_threads()
                    io = proc.io_counters() if hasattr(proc, "io_counters") else None
            except ps.Error:  # ended while being read: its reaper counts its time
                continue
            pids.add(proc.pid)
            cpu += t.user + t.system + t.children_user + t.children_system
            rss += mem.rss
            threads += n
            if io is not None:
                disk_r += io.read_bytes
                disk_w += io.write_bytes
        net_r = net_s = 0.0
        with contextlib.suppress(OSError, RuntimeError):
            for nic, c in ps.net_io_counters(pernic=True).items():
                if nic != "lo":
                    net_r += c.bytes_recv
                    net_s += c.bytes_sent
        now = time.time()
        values = {
            "system/rss_mib": rss / _MIB,
            "system/threads": threads,
            "system/procs": float(len(pids)),
        }
        if self._gpus is not None:
            self._gpus.sample(pids, values)
        return values, (now, cpu, disk_r, disk_w, net_r, net_s)

    def sample(self, write: bool = True) -> dict[str, float]:
        """One sample now: every metric, with rates over the time since the previous sample
        (none at the first). Written to the run's ``system/log.jsonl`` when ``write``."""
        with self._lock:
            values, now = self._read()
            last, self._last = self._last, now
            if last is not None:
                dt = max(now[0] - last[0], 1e-6)
                rate = [max(b - a, 0.0) / dt for a, b in zip(last[1:], now[1:], strict=True)]
                values["system/cpu_pct"] = 100.0 * rate[0]
                values["system/disk_read_mib_s"] = rate[1] / _MIB
                values["system/disk_write_mib_s"] = rate[2] / _MIB
                values["system/net_recv_mib_s"] = rate[3] / _MIB
                values["system/net_sent_mib_s"] = rate[4] / _MIB
            if write and last is not None:
                values["system/sampler_cpu_s"] = time.thread_time() if self._in_thread() else 0.0
                self._write(now[0], values)
                self.samples += 1
            return values

    def _in_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def _write(self, when: float, values: dict[str, float]) -> None:
        if self._file is None:
            self.path.parent.mkdir(exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")
        line = {"kind": "metric", "scope": "global", "payload": values, "step": None,
                "timestamp": when, "logger": "system"}  # fmt: skip
        self._file.write(json.dumps(line, allow_nan=False) + "\n")
        self._file.flush()
