"""Parent logs, forks; child logs and finishes; parent logs more and finishes; argv: path n."""

from __future__ import annotations

import os
import sys

from _setup import attach_sink, use_socket

import goggles_io as gg

path, n = sys.argv[1], int(sys.argv[2])
use_socket()
attach_sink(path)
log = gg.get_logger("forker", with_metrics=True)
for i in range(n):
    log.scalar("before", float(i), step=i)
pid = os.fork()
if pid == 0:
    for i in range(n):
        log.scalar("child", float(i), step=i)
    gg.finish(timeout=30)
    os._exit(0)
for i in range(n):
    log.scalar("parent", float(i), step=i)
_, status = os.waitpid(pid, 0)
for i in range(n):
    log.scalar("after_child", float(i), step=i)
report = gg.finish(timeout=30)
print("child_status", status, "timed_out", report.timed_out, flush=True)
