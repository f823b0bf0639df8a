"""The producer's shared-memory pool: 96 MiB by default, each segment's room taken before it is
mapped (ADR 0083).

A settled burst of 1 MiB images stays in shared memory when the pool holds most of it; the pool
must still never crash the producer where ``/dev/shm`` is small or nearly full (a sparse segment
maps fine, and the first copy into a page the filesystem has no room for is a SIGBUS), must stay
within its byte budget, and must keep every acknowledged image intact when two producers share a
host or the host is SIGKILLed mid-burst. The nearly-full cases run the producer in a private mount
namespace (``unshare -rm``) over a small tmpfs mounted on its ``/dev/shm``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goggles_io._transport.settings import read_transport_settings
from goggles_io._transport.shm import ShmPool, list_segments
from support import expect_line, send_line, start, wait_until

SCRIPTS = Path(__file__).parent / "scripts"
_SEGMENT = 16 << 20


def _unshare_works() -> bool:
    """Whether this machine lets us mount a tmpfs on /dev/shm in a private mount namespace."""
    if shutil.which("unshare") is None:
        return False
    probe = "mount -t tmpfs -o size=1m tmpfs /dev/shm"
    try:
        done = subprocess.run(
            ["unshare", "-rm", "sh", "-c", probe], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


needs_unshare = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not _unshare_works(),
    reason="needs unshare -rm (a private mount namespace) to mount a small tmpfs",
)


# -- units ---------------------------------------------------------------------------------------
def _rss_shmem_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssShmem:"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status")
def test_the_default_pool_is_six_reserved_pre_faulted_segments_counted_in_rss() -> None:
    """The default budget makes six 16 MiB segments; each file's blocks are allocated when it is
    made (not a sparse file the first copy would fill) and its pages are mapped in this process,
    so the producer's resident set (the bound TestByteBudgets holds) counts the whole pool."""
    before = _rss_shmem_mib()
    pool = ShmPool.with_budget(read_transport_settings({}).shm_bytes)
    try:
        ref = pool.put(np.ones((512, 512, 4), dtype=np.uint8))
        assert ref is not None
        pool.prewarm()
        wait_until(lambda: len(pool.segment_names) == 6, timeout_s=60, what="six segments")
        sizes = [os.stat(os.path.join(pool.dir, n)) for n in pool.segment_names]

        assert (6, 0) == (pool.max_segments, pool.refused)
        assert all(st.st_size == _SEGMENT and st.st_blocks * 512 >= _SEGMENT for st in sizes)
        assert _rss_shmem_mib() - before >= 6 * 16, (before, _rss_shmem_mib())
    finally:
        pool.close()


@pytest.mark.parametrize("seed", range(5))
def test_a_close_while_prewarm_makes_a_segment_leaves_no_file(tmp_path: Path, seed: int) -> None:
    """Closed at a seeded moment while the background prewarm makes its segments, the pool
    leaves its folder empty the moment ``close`` returns (a process that exits right after, as
    a short image script does, used to leave the segment being made: swept only by the next
    start), and makes nothing after."""
    rng = random.Random(seed)
    for _ in range(8):
        folder = tmp_path / f"shm-{rng.random()}"
        folder.mkdir()
        pool = ShmPool(segment_bytes=4 << 20, max_segments=6, shm_dir=str(folder))
        assert pool.put(np.ones(1 << 20, dtype=np.uint8)) is not None
        made = rng.randint(1, 5)
        pool.prewarm()
        wait_until(lambda p=pool, m=made: len(p.segment_names) >= m, what="some segments made")
        pool.close()
        assert [] == list_segments(str(folder))
        assert [] == os.listdir(folder)


def test_the_budget_is_checked_before_a_segment_is_made() -> None:
    """A pool of two 1 MiB segments filled past its budget refuses the third array without
    making a third segment: /dev/shm holds exactly its two files, of its budget in bytes."""
    pool = ShmPool(segment_bytes=1 << 20, max_segments=2)
    try:
        refs = [pool.put(np.full(700_000, i, dtype=np.uint8)) for i in range(4)]
        mine = [n for n in list_segments(pool.dir) if n in pool.segment_names]
        held = sum(os.stat(os.path.join(pool.dir, n)).st_size for n in mine)

        assert [True, True, False, False] == [r is not None for r in refs]
        assert (2, 2 << 20, 0) == (len(mine), held, pool.refused)
    finally:
        pool.close()


# -- no room in /dev/shm -------------------------------------------------------------------------
def _in_small_shm(size_mib: int, fill_mib: int, argv: list[str]) -> list[str]:
    """``argv`` run in a private mount namespace whose /dev/shm is a ``size_mib`` tmpfs of
    which ``fill_mib`` are taken by someone else's file."""
    script = (
        f"mount -t tmpfs -o size={size_mib}m tmpfs /dev/shm && "
        f'head -c {fill_mib << 20} /dev/zero > /dev/shm/someone-else && exec "$0" "$@"'
    )
    return ["unshare", "-rm", "sh", "-c", script, *argv]


@needs_unshare
def test_a_segment_the_filesystem_has_no_room_for_is_refused_not_a_sigbus(tmp_path: Path) -> None:
    """Over a 20 MiB tmpfs (not /dev/shm: no headroom rule, only the reservation), a pool of
    three 16 MiB segments stores 16 arrays intact, refuses the second segment once, leaves no
    file of it, and the producer lives (before ADR 0083: a SIGBUS at the 17th copy)."""
    mount = tmp_path / "shm"
    mount.mkdir()
    script = f'mount -t tmpfs -o size=20m tmpfs {mount} && exec "$0" "$@"'
    argv = [sys.executable, str(SCRIPTS / "shm_no_room.py"), str(mount)]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SCRIPTS), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, *argv],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip

    assert 0 == done.returncode, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"stored": 16, "intact": 16, "refused": 1, "files": 1} == got, done.stderr
    assert "no room for a segment" in done.stderr


@needs_unshare
@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("size_mib", "fill_mib", "kept"),
    [(20, 14, 0), (48, 20, 1)],
    ids=["nearly-full", "room-for-one-segment"],
)
def test_a_producer_over_a_nearly_full_dev_shm_delivers_every_image(
    bus: Any, finished: Any, size_mib: int, fill_mib: int, kept: int
) -> None:
    """A producer (and the dedicated host it starts) whose /dev/shm is nearly full logs 60
    distinct 1 MiB images: the pool keeps the segments that leave a quarter of /dev/shm free,
    says so once, the rest go through the disk pool, and every image arrives intact, once."""
    path = bus.root / "stash.jsonl"
    argv = [sys.executable, str(SCRIPTS / "stashing_producer.py"), str(path), "60", "0"]
    proc = start(
        _in_small_shm(size_mib, fill_mib, argv), cwd=SCRIPTS,
        env={**bus.env, "GOGGLES_HOST_IMPORTS": "stashing_sink"},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    bus.procs.append(proc)
    expect_line(proc, "ready")
    for _ in range(2):
        send_line(proc, "log")
        expect_line(proc, "logged")
    send_line(proc, "finish")
    stdout, stderr = finished(proc, timeout_s=180)
    records = _records(path)

    assert sorted(r["i"] for r in records) == list(range(60)), stderr
    assert all(r["ok"] for r in records), records
    assert f"the pool keeps {kept} of 16 MiB" in stderr, stderr
    _nothing_lost(json.loads(stdout.strip().splitlines()[-1]), stderr)


# -- over a real host, the default pool ----------------------------------------------------------
@pytest.mark.timeout(300)
def test_two_producers_at_once_each_deliver_every_image_intact(bus: Any, finished: Any) -> None:
    """Two producers, each with its own default pool, flood one dedicated host with 150
    distinct 1 MiB images at once: each image arrives intact exactly once per producer."""
    path = bus.root / "stash.jsonl"
    procs = [
        bus.run("stashing_producer.py", path, 150, 0, GOGGLES_HOST_IMPORTS="stashing_sink")
        for _ in range(2)
    ]
    for proc in procs:
        expect_line(proc, "ready")
    for proc in procs:
        send_line(proc, "log")
    for proc in procs:
        expect_line(proc, "logged")
        send_line(proc, "log")
    for proc in procs:
        expect_line(proc, "logged")
        send_line(proc, "finish")
    outs = [finished(proc, timeout_s=240) for proc in procs]
    records = _records(path)

    assert sorted(r["i"] for r in records) == sorted(list(range(150)) * 2)
    assert all(r["ok"] for r in records) and not any(r["re"] for r in records)
    for stdout, stderr in outs:
        _nothing_lost(json.loads(stdout.strip().splitlines()[-1]), stderr)


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_host_killed_at_a_seeded_moment_of_a_200_image_burst_loses_nothing(
    bus: Any, finished: Any, seed: int
) -> None:
    """A 200-image burst through the default pool (most of it in shared memory at once); the
    host is SIGKILLed once a seeded number of images were handled: the next host gets what the
    dead one did not acknowledge, every image arrives intact (a second sighting only as a marked
    redelivery), and the producer counts nothing lost."""
    path = bus.root / "stash.jsonl"
    images, after = 200, random.Random(seed).randrange(1, 90)
    proc = bus.run("stashing_producer.py", path, images, 0, GOGGLES_HOST_IMPORTS="stashing_sink")
    expect_line(proc, "ready")
    send_line(proc, "log")
    wait_until(lambda: len(_records(path)) >= after, timeout_s=120, what=f"{after} handled")
    pid = wait_until(lambda: bus.host_alive() and bus.host_pid(), timeout_s=60, what="a host")
    os.kill(int(pid), signal.SIGKILL)
    expect_line(proc, "logged")
    send_line(proc, "log")
    expect_line(proc, "logged")
    send_line(proc, "finish")
    stdout, stderr = finished(proc, timeout_s=240)
    seen: dict[int, list[bool]] = {}
    records = _records(path)
    bad = [r for r in records if not r["ok"]]
    for r in records:
        seen.setdefault(r["i"], []).append(r["re"])

    assert sorted(seen) == list(range(images)), (after, stderr[-2000:])
    assert [] == [(r["i"], r["re"]) for r in bad], after
    assert [] == [i for i, marks in seen.items() if not all(marks[1:])], after
    _nothing_lost(json.loads(stdout.strip().splitlines()[-1]), stderr)


# -- helpers -------------------------------------------------------------------------------------
def _records(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if "i" in r]


def _nothing_lost(report: dict[str, Any], stderr: str) -> None:
    assert {} == report["transport"], (report, stderr[-2000:])
    assert (0, 0, False) == (report["dropped"], report["lost"], report["timed_out"]), report
