"""Per-event cost of each stage of the broker and worker paths, one thread, no I/O.

Run: ``python3 benchmarks/broker_stages.py [--rev 41a0e84] [--repeats 3]``

What ``broker.py --cpu`` and ``workers_vs_rev.py`` measure as whole threads, split into the
steps each thread takes per event, on the events the benchmarks send: 1,024 ``scalar`` events
as a host decodes them (the broker path) and one 1,568-event episode of ``_worker_runtime``
(the worker path). Each stage is timed on its own (best of 5 x 20 rounds) in a fresh process,
on this checkout's ``src`` and on ``--rev``'s, alternately; medians over ``--repeats``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _revision import unpack

_ROOT = Path(__file__).resolve().parent.parent
_STAGES = r"""
import json, logging, os, sys, timeit
os.environ["GOGGLES_TRANSPORT"] = "inprocess"
import msgpack
import goggles_io as gg
import runtime_telemetry as rt
from goggles_io._broker.entries import decode_entry, encode_entry
from goggles_io._bus.bus import EventBus
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import read_delivery_policy
from goggles_io._event.codec import Decoder, Encoder
try:  # rows in flight (ADR 0071); before it, events
    from goggles_io._event.rows import nbytes as approx_nbytes, row_of
except ImportError:
    from goggles_io._event.records import approx_nbytes
    row_of = None
from experiment_telemetry.workers import replay_episode
from _worker_runtime import episode_events

captured = []
class Keep(gg.BaseHandler):
    def handle_batch(self, events):
        captured.extend(events)
    def handle(self, event):
        captured.append(event)
gg.attach(Keep(name="keep"), scopes=["*"])
log = gg.get_logger("bench", with_metrics=True)
for i in range(1024):
    log.scalar("x", float(i), step=i)
gg.flush(30)
events = captured[:1024]
if row_of is not None:
    events = [row_of(e) for e in events]
got = {}
def per(name, fn, n):
    got[name] = min(timeit.repeat(fn, number=20, repeat=5)) / 20 / n * 1e6

enc, dec = Encoder(), Decoder()
per("forwarder: approx_nbytes", lambda: list(map(approx_nbytes, events)), 1024)
pipe = Pipe(lambda s, items, r: None, label="stages", policy=read_delivery_policy(),
            max_bytes=1 << 40, batch_items=1024, ack_on_return=True)
def put_each():
    for e in events:
        pipe.put(e, 352)
per("forwarder: pipe.put per event", put_each, 1024)
if hasattr(pipe, "put_many"):
    sizes = [352] * 1024
    per("forwarder: pipe.put_many", lambda: pipe.put_many(events, sizes), 1024)
pipe.close(join_s=5)
per("forwarder: encode entry", lambda: encode_entry(enc, "p", 1, events), 1024)
frame = enc.encode(__import__("goggles_io._event.codec", fromlist=["Batch"]).Batch(1, events, False, "7-ab", 1))
per("host: decode a client batch", lambda: dec.decode(frame), 1024)
try:  # ADR 0079: the entry is the client's batch as it came
    from goggles_io._broker.frames import FrameTable
    table = FrameTable()
    def note_take():
        table.note(events, memoryview(frame))
        table.take([events])
    per("forwarder: note + take the client's frame (ADR 0079)", note_take, 1024)
except ImportError:
    pass
fields = {b"p": b"host:1:abcdef", b"s": b"1", b"d": encode_entry(enc, "p", 1, events)["d"]}
per("consumer: decode entry", lambda: decode_entry(dec, fields), 1024)
bus = EventBus(async_mode=False)
bus.unrouted.enabled = False
class Count(gg.BaseHandler):
    seen = 0
    def handle_batch(self, batch):
        for e in batch:
            if e.extra.get("name") is None and "x" in e.payload:
                Count.seen += 1
    def handle(self, event):
        self.handle_batch([event])
bus.attach(Count(name="count"), ["*"])
route = getattr(bus, "put_rows", None) or bus.emit_many
per("consumer: bus.put_rows to the counting handler", lambda: route(list(events)), 1024)

rt.configure({"telemetry": "INFO", "telemetry.experiment_telemetry": "OFF"})
schemas = episode_events(120)
m = len(schemas)
class NoOp(rt.Subscriber):
    def on_event(self, schema):
        pass
NoOp().subscribe("telemetry.stages")
triples = [("telemetry.stages", 20, rt.to_dict(s)) for s in schemas]
chunks = [msgpack.packb(triples[i:i + 64]) for i in range(0, m, 64)]
emit = rt.get_telemetry("stages").emit
def emit_all():
    for s in schemas:
        emit(s)
per("worker/in-process: emit to a no-op subscriber", emit_all, m)
per("worker: to_dict", lambda: [rt.to_dict(s) for s in schemas], m)
per("worker: msgpack chunks of 64", lambda: [msgpack.packb(triples[i:i + 64]) for i in range(0, m, 64)], m)
per("experiment: unpack chunks", lambda: [msgpack.unpackb(c) for c in chunks], m)
per("experiment: from_dict", lambda: [rt.from_dict(d) for _, _, d in triples], m)
per("experiment: replay_episode (from_dict + re-emit)", lambda: replay_episode(triples, 0), m)
print("RESULT", json.dumps(got))
"""


def _sample(src: Path) -> dict[str, float]:
    bench = _ROOT / "benchmarks"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{bench}"}
    env = {k: v for k, v in env.items() if not k.startswith("GOGGLES_BROKER")}
    done = subprocess.run(
        [sys.executable, "-c", _STAGES], env=env, cwd=bench, capture_output=True, text=True
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"stages on {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][7:])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="41a0e84")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="broker-stages-") as tmp:
        sides = {
            "this checkout": _ROOT / "src",
            args.rev: unpack(args.rev, Path(tmp) / "old") / "src",
        }
        got: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for _ in range(args.repeats):
            for side, src in sides.items():
                got[side].append(_sample(src))
    names = list(dict.fromkeys(k for runs in got.values() for r in runs for k in r))
    print(f"# benchmarks/broker_stages.py --rev {args.rev}, medians of {args.repeats} processes")
    print("| stage | " + " | ".join(f"{side} (µs/event)" for side in got) + " |")
    print("|---|" + "---:|" * len(got))
    for name in names:
        cells = [
            f"{statistics.median(r[name] for r in runs):.3f}" if name in runs[0] else "-"
            for runs in got.values()
        ]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
