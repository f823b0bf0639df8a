"""The host lends handlers read-only views of the producer's shared memory (ADR 0077).

A slot goes back to the producer only once its batch is acknowledged *and* its last reader on
the host is done: the Ack pins the slots a reader still holds, a Release gives them back. The
adversary keeps payloads after ``handle()`` returns while the producer goes on logging from one
buffer it refills (and, in the second test, while the host is SIGKILLed mid-burst): no payload it
holds may ever change. The unit tests drive the leases, the reader and the producer's pins
directly, on real shared-memory segments.
"""

from __future__ import annotations

import gc
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goggles_io._delivery.policy import DeliveryPolicy, WhenFull
from goggles_io._event.records import ShmRef
from goggles_io._transport.client.pools import ArrayPools
from goggles_io._transport.lending import SlotLeases
from goggles_io._transport.shm import ShmPool, ShmReader
from support import expect_line, send_line, wait_until

_IMAGES = 40
_POOL = 4 * 1024 * 1024  # four 1 MiB slots: kept payloads pin them, the rest must cycle
_KEEP = 6  # more than the slots: with no pin, a kept payload's slot would be reused under it
_NONZERO_LOSS = re.compile(r"\b[1-9]\d* (?:dropped|lost|not delivered|uncounted)")


# -- units ---------------------------------------------------------------------------------------
def _pool_and_ref(pool: ShmPool, value: int) -> ShmRef:
    ref = pool.put(np.full((256, 1024), value, dtype=np.uint8))
    assert ref is not None
    return ref


def test_a_lent_view_is_read_only_and_its_last_view_returns_the_slot() -> None:
    """Equal bytes, no copy, writes refused; the lease lives while any derived view does."""
    pool = ShmPool(segment_bytes=1 << 20, max_segments=1)
    leases = SlotLeases()
    reader = ShmReader(lend=leases)
    me, connection = os.getpid(), object()
    leases.serve(me, connection)
    try:
        ref = _pool_and_ref(pool, 7)
        array = reader.read(ref)
        assert reader.lent == [(ref.segment, ref.offset)]
        assert (array == 7).all() and not array.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            array[0, 0] = 1
        view = array[1:].T
        del array
        gc.collect()
        assert leases.live() == 1  # the derived view keeps the lease
        assert leases.pin_live([(ref.segment, ref.offset)]) == [(ref.segment, ref.offset)]
        assert leases.take_released(me, connection) == []
        del view
        assert leases.live() == 0
        assert leases.take_released(me, object()) == []  # only to the connection serving it
        assert leases.take_released(me, connection) == [(ref.segment, ref.offset)]
        assert leases.take_released(me, connection) == []  # released once
        # A slot whose last reader was done before the ack is neither pinned nor released.
        again = reader.read(ref)
        del again
        assert leases.pin_live([(ref.segment, ref.offset)]) == []
        assert leases.take_released(me, connection) == []
    finally:
        reader.close()
        pool.close()


def test_a_lease_ended_by_the_garbage_collector_takes_no_lock() -> None:
    """A payload in a reference cycle ends when the cyclic collector runs, which may be inside
    the leases' own lock (any allocation): its end is only queued, so nothing deadlocks, and
    the next call counts it."""
    pool = ShmPool(segment_bytes=1 << 20, max_segments=1)
    leases = SlotLeases()
    reader = ShmReader(lend=leases)
    try:
        ref = _pool_and_ref(pool, 5)
        cycle: list[Any] = [reader.read(ref)]
        cycle.append(cycle)
        del cycle
        with leases._lock:  # as if the collector ran inside it
            assert gc.collect() > 0
        assert leases.live() == 0
    finally:
        reader.close()
        pool.close()


def test_a_copying_reader_lends_nothing() -> None:
    """Without leases (left-overs, tests) the reader copies: writable, independent bytes."""
    pool = ShmPool(segment_bytes=1 << 20, max_segments=1)
    reader = ShmReader()
    try:
        ref = _pool_and_ref(pool, 3)
        array = reader.read(ref)
        assert array.flags.writeable and array.flags.owndata and reader.lent == []
    finally:
        reader.close()
        pool.close()


def test_a_pinned_slot_stays_out_of_the_pool_until_its_release() -> None:
    """The producer's side: an acknowledged batch's pinned slot is not reused before the
    Release (nor is the ring's space after it: slots come back oldest first); a Release the
    producer never saw pinned (a lost connection's) frees nothing."""
    pools = ArrayPools(
        threshold=1, shm_bytes=1 << 20, policy=DeliveryPolicy(when_full=WhenFull.DROP)
    )

    def stage(value: int) -> ShmRef | None:
        return pools.stage(np.full((256, 1024), value, dtype=np.uint8))  # 4 slots of 256 KiB

    try:
        refs = [stage(i) for i in range(4)]
        assert None not in refs and stage(9) is None  # full
        a, b, c, d = (r for r in refs if r is not None)
        slot = (b.segment, b.offset)
        pools.unpin([slot])  # never pinned here: ignored
        pools.pin([slot])
        pools.give_back([a, b, c, d])  # the ack: all go back but the pinned one
        again = stage(5)
        assert again is not None and again.offset == a.offset  # the one before it
        assert stage(9) is None  # b still held: the ring does not pass it
        pools.pin([slot])  # a second lease of it, pinned by a later ack
        pools.unpin([slot])
        assert stage(9) is None  # one pin left
        pools.unpin([slot])
        back = stage(6)
        assert back is not None and (back.segment, back.offset) == slot
    finally:
        pools.close()


# -- over a real host ----------------------------------------------------------------------------
def _records(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    lines = [json.loads(raw) for raw in path.read_text().splitlines()] if path.exists() else []
    return [r for r in lines if "i" in r], [r for r in lines if r.get("closed")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (OSError, IndexError):
        return False


def _check(report: dict[str, Any], stderr: str) -> None:
    """Nothing lost, dropped or abandoned, in the FinishReport nor in the end-of-run line."""
    assert {} == report["transport"], (report, stderr)
    assert (0, 0, False) == (report["dropped"], report["lost"], report["timed_out"]), report
    assert not _NONZERO_LOSS.search(stderr), stderr


@pytest.mark.timeout(240)
def test_kept_payloads_never_change_while_the_producer_logs_on(bus: Any, finished: Any) -> None:
    """40 images, 5 ms apart, through a 4-slot pool into a sink that keeps the last 6 payloads
    (with no pin, a kept payload's slot would be reused under it): each image
    arrives intact, no payload it holds ever changes, lent views refuse writes, and slots come
    back and are lent again while a kept one stays pinned (more lent images than slots)."""
    path = bus.root / "stash.jsonl"
    proc = bus.run(
        "stashing_producer.py", path, _IMAGES, _KEEP, 0.005,
        GOGGLES_HOST_IMPORTS="stashing_sink", GOGGLES_SHM_BYTES=str(_POOL),
    )  # fmt: skip
    expect_line(proc, "ready")
    send_line(proc, "log")
    expect_line(proc, "logged")
    send_line(proc, "log")
    expect_line(proc, "logged")
    send_line(proc, "finish")
    stdout, stderr = finished(proc, timeout_s=180)
    report = json.loads(stdout.strip().splitlines()[-1])
    wait_until(lambda: _records(path)[1], timeout_s=60, what="the sink closed")
    records, closed = _records(path)
    summary = {
        "handled": len(records),
        "lent": sum(r["lent"] for r in records),
        "bad": [r["i"] for r in records if not r["ok"]],
        "changed": [r["changed"] for r in records if r["changed"]] + [c["changed"] for c in closed],
        "report": report,
    }
    print(f"lent arrays: {summary}")
    assert sorted(r["i"] for r in records) == list(range(_IMAGES)), summary
    assert ([], []) == (summary["bad"], [c for c in summary["changed"] if c]), summary
    assert summary["lent"] > _POOL >> 20, summary  # slots were released and lent again
    assert report["handler"] == [_IMAGES, 0, 0, {}], (report, stderr)
    _check(report, stderr)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_host_killed_mid_burst_with_kept_payloads_loses_and_changes_nothing(
    bus: Any, finished: Any
) -> None:
    """The same sink (keeping the last 4) and the default pool; the host is SIGKILLed once the
    first half is being handled: the next host gets what the dead one did not acknowledge, every
    image arrives intact (a second sighting only as a marked redelivery), no kept payload
    changes on either host, and the producer counts nothing lost."""
    path = bus.root / "stash.jsonl"
    images = 120
    proc = bus.run("stashing_producer.py", path, images, 4, GOGGLES_HOST_IMPORTS="stashing_sink")
    expect_line(proc, "ready")
    send_line(proc, "log")
    wait_until(lambda: len(_records(path)[0]) >= 10, timeout_s=120, what="10 images handled")
    pid = wait_until(lambda: bus.host_alive() and bus.host_pid(), timeout_s=60, what="a host")
    os.kill(int(pid), signal.SIGKILL)
    wait_until(lambda: not _alive(int(pid)), timeout_s=30, what="the host gone")
    expect_line(proc, "logged")
    send_line(proc, "log")
    expect_line(proc, "logged")
    send_line(proc, "finish")
    stdout, stderr = finished(proc, timeout_s=240)
    report = json.loads(stdout.strip().splitlines()[-1])
    wait_until(lambda: _records(path)[1], timeout_s=60, what="the second host's sink closed")
    records, closed = _records(path)
    seen: dict[int, list[bool]] = {}
    for r in records:
        seen.setdefault(r["i"], []).append(r["re"])
    summary = {
        "handled": len(records),
        "bad": [r["i"] for r in records if not r["ok"]],
        "changed": [r["changed"] for r in records if r["changed"]] + [c["changed"] for c in closed],
        "unmarked twice": [i for i, marks in seen.items() if not all(marks[1:])],
        "report": report,
    }
    print(f"lent arrays, host killed: {summary}")
    assert sorted(seen) == list(range(images)), summary
    assert ([], [], []) == (
        summary["bad"],
        [c for c in summary["changed"] if c],
        summary["unmarked twice"],
    ), summary
    _check(report, stderr)
