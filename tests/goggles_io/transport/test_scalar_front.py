"""The socket client's scalar front (ADR 0088): rows laid end to end before the pipe.

What must hold: every scalar put is delivered once or counted, in the order each thread put it,
with other rows, operations and flushes between; the pipe's queue bound counts a run's rows;
the worker's seal never blocks; a run encodes to the same bytes as its rows; an unencodable
value costs only its row.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._bus.front import SCALAR_ROW_BYTES, ScalarFront, run_extra
from goggles_io._delivery.losses import NOT_DELIVERED, QUEUE_FULL
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull
from goggles_io._event.codec import Encoder
from goggles_io._event.messages import Batch
from goggles_io._event.rows import (
    SLOTS,
    Row,
    RowRun,
    count_rows,
    payload_of,
    run_rows,
    step_of,
)
from goggles_io._transport.client.batching import Batcher
from goggles_io._transport.client.socket_client import client_pipe
from support import wait_until


def _scalar(name: str, step: int, value: float = 0.5, extra: Any = None) -> Row:
    return ("metric", "global", name, None, step, 1.0 + step, "t", 7, "f.py", 3, extra, None,
            value, "", 0)  # fmt: skip


class _Sink:
    """Takes the client's batches (rows and runs), acknowledging each at once unless held."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.hold = False
        self.lock = threading.Lock()
        self.pipe: Pipe[Any] | None = None

    def send(self, seq: int, items: list[Any], redelivered: bool) -> None:
        with self.lock:
            if self.hold:
                msg = "host down"
                raise ConnectionError(msg)
            for item in items:
                self.rows += run_rows(item) if type(item) is RowRun else [item]
        assert self.pipe is not None
        self.pipe.ack(seq)


def _client(sink: _Sink, tmp_path: Path, queue_size: int, when_full: WhenFull) -> Pipe[Any]:
    policy = DeliveryPolicy(
        when_full=when_full, spool_dir=str(tmp_path / "spool"), block_timeout_s=0.05
    )
    pipe = client_pipe(sink.send, policy, queue_size, 64 << 20)
    sink.pipe = pipe
    return pipe


class TestOrderAndOnce:
    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_threads_with_sealing_moments_deliver_each_row_once_in_each_threads_order(
        self, tmp_path: Path, seed: int
    ) -> None:
        sink = _Sink()
        pipe = _client(sink, tmp_path, 65_536, WhenFull.SPILL)
        front = ScalarFront(pipe, 65_536)
        pipe.refill = front.refill
        pipe.put(("log", "global", "start", 20, None, 0.0, "t", 7, None, None, None, None, None,
                  "", 0), 400)  # fmt: skip  # starts the worker, as the client's first put does
        rng = random.Random(seed)
        stop = threading.Event()

        def produce(k: int) -> None:
            for i in range(20_000):
                front.put(_scalar(f"t{k}", i), SCALAR_ROW_BYTES)

        def sealer() -> None:  # control operations and other rows seal at any moment
            while not stop.is_set():
                time.sleep(rng.random() / 1000)
                front.seal()

        threads = [threading.Thread(target=produce, args=(k,)) for k in range(4)]
        sealing = threading.Thread(target=sealer)
        try:
            sealing.start()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            stop.set()
            sealing.join()
        wait_until(lambda: pipe.left() + len(front) == 0, timeout_s=60, what="all acknowledged")
        pipe.close()
        by_thread: dict[str, list[int]] = {}
        for row in sink.rows[1:]:
            by_thread.setdefault(payload_of(row), []).append(step_of(row))  # type: ignore[arg-type]
        assert sorted(by_thread) == ["t0", "t1", "t2", "t3"]
        for steps in by_thread.values():
            assert steps == list(range(20_000))
        assert pipe.delivered == 80_001
        assert pipe.losses() == {}


class TestBounds:
    def test_the_queue_bound_counts_a_runs_rows_and_every_drop_is_counted(
        self, tmp_path: Path
    ) -> None:
        sink = _Sink()
        sink.hold = True  # a host down: nothing goes, the queue fills
        pipe = _client(sink, tmp_path, 256, WhenFull.DROP)
        front = ScalarFront(pipe, 256)
        pipe.refill = front.refill
        assert front.cap == 32
        held = 0
        for i in range(5_000):
            front.put(_scalar("x", i), SCALAR_ROW_BYTES)
            held = max(held, pipe.left() + len(front))
        # Held: the queue (256 units; a run may pass it by its own rows), the batch the worker
        # tries again, and the front's run being gathered.
        assert held <= 2 * (256 + 32)
        front.seal()
        left = pipe.close()
        losses = pipe.losses()
        assert losses[QUEUE_FULL] > 4_000
        assert losses[NOT_DELIVERED] == left
        assert sum(losses.values()) == 5_000  # each one dropped and counted, or not delivered

    def test_the_workers_seal_never_blocks_and_puts_a_run_back_at_the_head(
        self, tmp_path: Path
    ) -> None:
        sink = _Sink()
        pipe = _client(sink, tmp_path, 64, WhenFull.BLOCK)
        front = ScalarFront(pipe, 64)  # cap 8
        pipe.refill = front.refill
        for i in range(8):
            front.put(_scalar("x", i), SCALAR_ROW_BYTES)
        # Not started: put_run refuses (the first put starts the worker), so the worker's seal
        # gives the run back and returns at once.
        start = time.monotonic()
        assert front.refill() is False
        assert time.monotonic() - start < 0.05
        assert len(front) == 8
        front.put(_scalar("x", 8), SCALAR_ROW_BYTES)  # full: a producer seals, row by row
        wait_until(lambda: pipe.left() + len(front) == 0, timeout_s=30, what="delivered")
        assert [step_of(r) for r in sink.rows] == list(range(9))
        pipe.close()


class TestEncoding:
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.tuples(
                st.integers(0, 2**40),
                st.floats(allow_nan=False),
                st.sampled_from(["a", "b", "loss"]),
                st.none()
                | st.dictionaries(
                    st.sampled_from(["k", "j"]), st.integers(-(2**63), 2**63 - 1), max_size=2
                ),
            ),
            min_size=1,
            max_size=50,
        )
    )
    def test_a_run_encodes_to_the_bytes_of_its_rows(self, spec: list[Any]) -> None:
        rows = [_scalar(name, step, value, extra) for step, value, name, extra in spec]
        run = RowRun(v for row in rows for v in row)
        assert run_rows(run) == rows
        assert count_rows([run, rows[0]]) == len(rows) + 1
        assert run_extra([run, rows[0]]) == len(rows) - 1
        for producer, first in (("", 0), ("p-1", 1 << 20)):
            want = Encoder().encode(Batch(3, rows, False, producer, first))
            assert Encoder().encode(Batch(3, run, False, producer, first)) == want

    def test_an_unencodable_extra_costs_only_its_row_with_the_others_numbered_as_sent(
        self,
    ) -> None:
        rows = [_scalar("x", i, extra={"bad": object()} if i == 5 else None) for i in range(10)]
        lost: list[Exception] = []
        batcher = Batcher(lambda refs: None, lost.append)
        batcher.encoder = Encoder()
        run = RowRun(v for row in rows for v in row)
        frames = batcher.frames(run, producer="p-1", first=100)  # type: ignore[arg-type]
        assert len(lost) == 1
        carried = [r for frame in frames for r in frame[2]]
        assert [step_of(r) for r in carried] == [0, 1, 2, 3, 4, 6, 7, 8, 9]
        assert len(run) == 10 * SLOTS


class TestOverAHost:
    @pytest.mark.parametrize("seed", [11, 12])
    def test_scalars_text_pushes_and_flushes_from_threads_arrive_once_in_order(
        self, bus: Any, seed: int
    ) -> None:
        threads, n = 3, 3_000
        proc = bus.run("front_order.py", bus.jsonl, threads, n, seed)
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        assert json.loads(out.strip().splitlines()[-1])["losses"] == {}
        seen: dict[int, list[tuple[str, int]]] = {k: [] for k in range(threads)}
        for line in bus.lines():
            event = json.loads(line)
            payload = event["payload"]
            if event["kind"] == "log":
                k, i = payload.split()
                seen[int(k[1:])].append(("m", int(i[1:])))
                continue
            for key in payload:
                if key.startswith("t"):
                    seen[int(key[1:])].append(("s", event["step"]))
                elif key.endswith("/0"):  # a push's two values travel as one event or two
                    seen[int(key[1:].split("/")[0])].append(("p", event["step"]))
        for k in range(threads):
            rng = random.Random(seed * 100 + k)
            want: list[tuple[str, int]] = []
            for i in range(n):
                want.append(("s", i))
                roll = rng.random()
                if roll < 0.01:
                    want.append(("m", i))
                elif roll < 0.015:
                    want.append(("p", i))
            assert seen[k] == want
