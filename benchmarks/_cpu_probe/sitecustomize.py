"""CPU per thread of every benchmark process, for ``broker.py --cpu`` (not part of the package).

Python imports ``sitecustomize`` at start-up from ``sys.path``: a benchmark that puts this folder
on the ``PYTHONPATH`` of its children (and so of the goggles hosts they spawn) and sets
``GG_BENCH_CPU_DIR`` gets, from each process, one JSON file at exit: its argv and the CPU
seconds (user + system, from ``/proc``) of each thread by its Python name, sampled every 20 ms
so that threads which ended before the process are counted too, less what each thread had used
when the file ``go`` appeared in that folder (the benchmark creates it as the timed part starts:
start-up and warm-up are left out). Nothing is profiled: the numbers are the processes' own, at
full speed.
"""

from __future__ import annotations

import os

_DIR = os.environ.get("GG_BENCH_CPU_DIR")


def _install(folder: str) -> None:
    import atexit
    import json
    import sys
    import threading
    import time

    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[str, tuple[str, float]] = {}
    base: dict[str, float] | None = None  # CPU of each thread when ``go`` appeared
    go = os.path.join(folder, "go")
    lock = threading.Lock()

    def sample() -> None:
        names = {t.native_id: t.name for t in threading.enumerate()}
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat", encoding="ascii") as fp:
                    fields = fp.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            cpu = (int(fields[11]) + int(fields[12])) / tick
            with lock:
                name = names.get(int(tid)) or seen.get(tid, ("?", 0.0))[0]
                seen[tid] = (name, cpu)

    def loop() -> None:
        nonlocal base
        while True:
            sample()
            if base is None and os.path.exists(go):
                with lock:
                    base = {tid: cpu for tid, (_, cpu) in seen.items()}
            time.sleep(0.02)

    def dump() -> None:
        sample()
        threads: dict[str, float] = {}
        with lock:
            for tid, (name, cpu) in seen.items():
                if name != "gg-cpu-probe":
                    used = cpu - (base or {}).get(tid, 0.0)
                    threads[name] = threads.get(name, 0.0) + used
        path = os.path.join(folder, f"{os.getpid()}.json")
        with open(path, "w", encoding="utf-8") as fp:
            json.dump({"argv": sys.argv, "threads": threads}, fp)

    threading.Thread(target=loop, name="gg-cpu-probe", daemon=True).start()
    atexit.register(dump)


if _DIR:
    _install(_DIR)
