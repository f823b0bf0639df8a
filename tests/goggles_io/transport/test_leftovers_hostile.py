"""The left-over deliverer treats the spool as hostile (issue 41, item 5; ADR 0061).

Every folder under the spool root is looked at with ``lstat`` through folder descriptors before
anything in it is opened: a FIFO or a symlink where a file or a folder is expected is never
opened nor followed, and the folder is reported in one line and left. A folder of another uid
is refused in one line, never delivered, never touched. Two deliverers at once deliver each
folder once (a ``flock`` on the folder, then a rename). A deliverer SIGKILLed at random moments
loses nothing: the next one delivers the rest, every second sighting marked redelivered. Its own
last line says what happened: a sink that is slow but steady gets everything, and no "lost".

The folders are written byte for byte as ``finish()`` writes them (``tests/leftover_kit.py``),
for the scripts' ``RecordingSink``.
"""

from __future__ import annotations

import os
import random
import signal
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from leftover_kit import dead_owner_name, events, recording_spec, write_folder
from support import start, stop, wait_until

_FOREIGN_UID = 54_321


def _deliver(bus: Any, timeout_s: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m goggles_io.leftovers``, to its end (a hang fails the test at ``timeout_s``)."""
    return subprocess.run(
        [sys.executable, "-m", "goggles_io.leftovers"],
        cwd=bus.root,
        env={**bus.env, **env},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _start_deliverer(bus: Any, **env: str) -> subprocess.Popen[str]:
    proc: subprocess.Popen[str] = start(
        [sys.executable, "-m", "goggles_io.leftovers"],
        cwd=bus.root,
        env={**bus.env, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    bus.procs.append(proc)
    return proc


def _lines(path: Path) -> list[dict[str, Any]]:
    import json

    if not path.exists():
        return []
    return [json.loads(raw) for raw in path.read_text().splitlines()]


def _steps(path: Path) -> Counter[int]:
    return Counter(rec["i"] for rec in _lines(path) if rec["k"] == "metric")


def _spool() -> Path:
    return Path(os.environ["GOGGLES_SPOOL_DIR"])


def _said(result: subprocess.CompletedProcess[str], name: str) -> list[str]:
    text = result.stdout + result.stderr
    return [line for line in text.splitlines() if name in line]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("file", ["events.bin", "manifest.json", "ops.msgpack"])
def test_a_fifo_where_a_file_is_expected_is_never_opened(bus: Any, file: str) -> None:
    """The deliverer does not hang on a FIFO; it says so in one line and leaves the folder,
    FIFO included; a good folder beside it is delivered."""
    sink = bus.root / "sink.jsonl"
    bad = write_folder(_spool(), recording_spec(sink), events(0, 100))
    (bad / file).unlink()
    os.mkfifo(bad / file, 0o600)
    write_folder(_spool(), recording_spec(sink), events(1000, 300))
    result = _deliver(bus, timeout_s=90)
    print(result.stdout, result.stderr)
    assert 1 == result.returncode, result
    assert Counter(range(1000, 1300)) == _steps(sink)
    said = _said(result, bad.name)
    assert 1 == len(said) and "not a regular file" in said[0], said
    fifos = [p for p in _spool().glob(f"*{bad.name}*/{file}") if stat.S_ISFIFO(p.lstat().st_mode)]
    assert 1 == len(fifos), sorted(_spool().iterdir())


@pytest.mark.timeout(180)
def test_a_producer_never_hangs_on_a_fifo_left_over(bus: Any, finished: Any) -> None:
    """A producer that starts beside a left-over folder holding a FIFO logs and finishes (it
    only looks at names); the deliverer it starts leaves the folder, FIFO unopened."""
    bad = write_folder(_spool(), recording_spec(bus.root / "sink.jsonl"), events(0, 10))
    (bad / "manifest.json").unlink()
    os.mkfifo(bad / "manifest.json", 0o600)
    stdout, _ = finished(bus.run("producer.py", bus.jsonl, 200), timeout_s=90)
    assert "timed_out False" in stdout
    assert 200 == len(bus.lines())
    left = _spool() / f"unreadable-{bad.name}"  # by the deliverer the producer started
    wait_until(lambda: left.is_dir(), timeout_s=60, what="the folder left, renamed")
    assert stat.S_ISFIFO((left / "manifest.json").lstat().st_mode)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("what", ["events.bin", "manifest.json", "folder"])
def test_a_symlink_is_never_followed(bus: Any, what: str) -> None:
    """A symlinked file or folder is refused in one line; its target is neither read into a
    sink nor changed nor removed."""
    sink = bus.root / "sink.jsonl"
    elsewhere = write_folder(bus.root / "elsewhere", recording_spec(sink), events(0, 100))
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    if what == "folder":
        bad = _spool() / dead_owner_name()
        os.symlink(elsewhere, bad)
    else:
        bad = write_folder(_spool(), recording_spec(sink), events(0, 100))
        (bad / what).unlink()
        os.symlink(elsewhere / what, bad / what)
    write_folder(_spool(), recording_spec(sink), events(1000, 300))
    result = _deliver(bus, timeout_s=90)
    print(result.stdout, result.stderr)
    assert 1 == result.returncode, result
    assert Counter(range(1000, 1300)) == _steps(sink), "nothing of the symlinked folder"
    assert 1 == len(_said(result, bad.name)), result
    assert before == {p.name: p.read_bytes() for p in elsewhere.iterdir()}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("whose", ["folder", "events.bin"])
def test_another_users_folder_is_refused_in_one_line_and_never_delivered(
    bus: Any, whose: str
) -> None:
    """A folder (or a file in it) of another uid: one line naming the uid, nothing delivered,
    the folder left as it is; a second deliverer refuses it again, still delivering nothing."""
    if os.getuid() != 0:
        pytest.skip("making another uid's folder needs root (CI runs the tests as root)")
    sink = bus.root / "sink.jsonl"
    foreign = write_folder(_spool(), recording_spec(sink), events(0, 3000))
    targets = [foreign, *foreign.iterdir()] if whose == "folder" else [foreign / whose]
    for path in targets:
        os.chown(path, _FOREIGN_UID, _FOREIGN_UID)
    write_folder(_spool(), recording_spec(sink), events(5000, 300))
    for _ in range(2):
        result = _deliver(bus, timeout_s=90)
        print(result.stdout, result.stderr)
        assert 1 == result.returncode, result
        said = _said(result, foreign.name)
        assert 1 == len(said) and f"uid {_FOREIGN_UID}" in said[0], said
        assert Counter(range(5000, 5300)) == _steps(sink), "the foreign folder delivered"
        assert foreign.is_dir() and (foreign / "events.bin").is_file()
        assert _FOREIGN_UID == targets[0].lstat().st_uid


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_two_deliverers_at_once_deliver_each_folder_once(bus: Any) -> None:
    """Two ``python -m goggles_io.leftovers`` started together over 8 folders: every event
    once in the sink, every folder gone, both exit 0."""
    sink = bus.root / "sink.jsonl"
    for k in range(8):
        write_folder(_spool(), recording_spec(sink, event_s=0.0002), events(k * 10_000, 1500))
    procs = [_start_deliverer(bus) for _ in range(2)]
    outs = [proc.communicate(timeout=240) for proc in procs]
    print(outs)
    assert [0, 0] == [proc.returncode for proc in procs], outs
    assert Counter(i for k in range(8) for i in range(k * 10_000, k * 10_000 + 1500)) == _steps(
        sink
    )
    assert [] == sorted(_spool().glob("leftover-*"))


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_deliverer_killed_at_random_moments_loses_nothing(bus: Any) -> None:
    """SIGKILL the deliverer three times, each after a seeded random number of lines reached the
    sink, then let one finish: every event is there, a second sighting is always marked
    redelivered, and no folder is left."""
    seed = int(os.environ.get("LEFTOVERS_KILL_SEED", time.time_ns() % 2**32))
    print(f"seed {seed} (LEFTOVERS_KILL_SEED={seed} reruns it)")
    rng = random.Random(seed)
    sink = bus.root / "sink.jsonl"
    want: Counter[tuple[str, int]] = Counter()
    for k in range(3):
        logged = events(k * 10_000, 1000, images_every=50)
        want.update((e.kind.value, e.step) for e in logged)
        write_folder(_spool(), recording_spec(sink, event_s=0.001), logged, chunk=200)
    total = sum(want.values())
    for _ in range(3):
        seen = len(_lines(sink))
        target = seen + rng.randint(20, total // 4)
        proc = _start_deliverer(bus)
        try:
            wait_until(
                lambda: len(_lines(sink)) >= target or proc.poll() is not None,  # noqa: B023
                timeout_s=120,
                what="the deliverer got far enough",
            )
        finally:
            proc.send_signal(signal.SIGKILL)
            stop(proc)
    result = _deliver(bus, timeout_s=180)
    print(result.stdout, result.stderr)
    assert 0 == result.returncode, result
    recs = _lines(sink)
    got = Counter((rec["k"], rec["i"]) for rec in recs)
    assert set(want) == set(got), set(want) ^ set(got)
    first_seen: set[tuple[str, int]] = set()
    for rec in recs:
        key = (rec["k"], rec["i"])
        assert key not in first_seen or rec["re"], f"{key} seen again, not marked (seed {seed})"
        first_seen.add(key)
    assert [] == sorted(_spool().glob("leftover-*"))
    assert [] == sorted(_spool().glob("unreadable-*"))


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_deliverers_line_tells_the_truth_about_a_slow_steady_sink(bus: Any) -> None:
    """1,500 events into a sink that takes 4 ms each (6 s) with ``GOGGLES_FINISH_STALL=2``: the
    sink makes progress all along (a record of 500 takes it 2 s), so it gets every event, the
    folder goes, and the deliverer's line says 1500 delivered, with no loss in it."""
    sink = bus.root / "sink.jsonl"
    folder = write_folder(_spool(), recording_spec(sink, event_s=0.004), events(0, 1500))
    result = _deliver(bus, timeout_s=180, GOGGLES_FINISH_STALL="2")
    text = result.stdout + result.stderr
    print(text)
    assert 0 == result.returncode, text
    assert Counter(range(1500)) == _steps(sink)
    assert not folder.exists() and [] == sorted(_spool().glob("leftover-*"))
    assert "1500 delivered" in text and "lost" not in text and "in time" not in text, text
