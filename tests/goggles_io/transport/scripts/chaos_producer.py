"""One producer of the conservation test: a seeded mix of scalars, images and text to every sink.

argv: seed index n out_dir csv_dir collector_url. Prints ``ready``, waits for ``go`` on stdin,
logs ``n`` events (each with a step unique across producers), prints ``logged``, waits for a
line on stdin, finishes and prints JSON: what it
logged per kind and its FinishReport (transport losses; per handler delivered, dropped, losses).
"""

from __future__ import annotations

import json
import random
import sys
import time

import numpy as np
from _setup import use_socket
from jsonl_sink import JsonlSink

import goggles_io as gg
from goggles_io.handlers.csv import CsvHandler
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.handlers.storage import LocalStorageHandler

seed, index, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
out_dir, csv_dir, url = sys.argv[4], sys.argv[5], sys.argv[6]
rng = random.Random(seed * 1000 + index)
use_socket()
gg.attach(JsonlSink(f"{out_dir}/slow.jsonl", name="slow", delay_s=0.0002), scopes=["global"])
gg.attach(LocalStorageHandler(f"{out_dir}/storage", name="storage"), scopes=["global"])
gg.attach(CsvHandler(csv_dir, name="csv"), scopes=["global"])
gg.attach(
    RemoteHandler(server_url=url, run_id="chaos", name="remote", read_env=False, enabled=True),
    scopes=["global"],
)
log = gg.get_logger("chaos", with_metrics=True)
image = np.zeros((256, 256, 4), dtype=np.uint8)  # 256 KiB: through shared memory
print("ready", flush=True)
sys.stdin.readline()
logged = {"metric": 0, "image": 0, "log": 0}
for i in range(n):
    step = index * 1_000_000 + i
    draw = rng.random()
    if draw < 0.8:
        log.scalar(f"p{index}", float(i), step=step)
        logged["metric"] += 1
    elif draw < 0.9:
        image[0, 0, 0] = i % 256
        log.image(image, name="img", step=step)
        logged["image"] += 1
    else:
        log.info("text %d", i, step=step)
        logged["log"] += 1
    if i % 500 == 499:
        time.sleep(rng.random() * 0.05)
print("logged", flush=True)
sys.stdin.readline()  # producers finish one after another: the last one closes the handlers
report = gg.finish(timeout=120)
handlers = {
    name: [s.delivered, s.dropped, s.errors, dict(s.losses)] for name, s in report.handlers.items()
}
print(
    json.dumps(
        {
            "logged": logged,
            "transport": dict(report.transport.losses),
            "handlers": handlers,
            "timed_out": report.timed_out,
        }
    ),
    flush=True,
)
