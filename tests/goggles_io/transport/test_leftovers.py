"""What ``finish()`` gives up on is kept on disk and delivered by the next process (issue 29).

A producer's handler hangs (a sink that takes nothing until a gate file exists) and
``GOGGLES_FINISH_STALL=1``: finish gives up, and every event it could not deliver (sent and
not acknowledged, in memory, spilled) is written, in order, with the handler's spec, into a
``leftover-<pid>-<start>`` folder under the spool root, and counted ``kept for later``. The
hung host is then killed, the gate opened, and the deliverer (the command, or the one the next
producer starts) replays them into the handler rebuilt from that spec (ADR 0060): all of them,
exactly once, in order, 1 MiB staged images intact, and the folder is gone. A damaged folder
is reported in one line and left, renamed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import wait_until

SCRIPTS = Path(__file__).parent / "scripts"
_SCALARS, _IMAGES = 30_000, 4
_MORE = 500  # the second producer's own scalars, after the leftovers


def _recording_sink() -> Any:
    """The scripts' ``recording_sink`` module: images are checked with its checksum."""
    spec = importlib.util.spec_from_file_location("recording_sink", SCRIPTS / "recording_sink.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _last_json(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.strip().splitlines()[-1])


def _expected(scalars: int, images: int, first: int = 0) -> list[tuple[str, int]]:
    every = scalars // images if images else 0
    out: list[tuple[str, int]] = []
    for i in range(scalars):
        out.append(("metric", first + i))
        if every and i % every == every - 1:
            out.append(("image", i // every))
    return out


def _produce_and_give_up(bus: Any, finished: Any, path: Path, gate: Path) -> tuple[Path, str]:
    """Run the producer against the hung sink; its left-over folder and stderr."""
    spool = Path(os.environ["GOGGLES_SPOOL_DIR"])
    proc = bus.run("leftover_producer.py", path, gate, _SCALARS, _IMAGES, 0, **_ENV)
    stdout, stderr = finished(proc, timeout_s=120)
    report = _last_json(stdout)
    total = _SCALARS + _IMAGES
    assert report["timed_out"], (report, stderr)
    assert {"kept for later": total} == report["transport"], (report, stderr)
    assert 0 == report["dropped"], (report, stderr)
    folders = sorted(spool.glob("leftover-*"))
    assert [f"leftover-{proc.pid}"] == [f.name.rsplit("-", 1)[0] for f in folders], folders
    folder = folders[0]
    assert 0o700 == folder.stat().st_mode & 0o777
    assert total == json.loads((folder / "manifest.json").read_text())["events"]
    assert str(folder) in stderr and "kept for later" in stderr, stderr
    kinds = _record_kinds(folder)
    print(f"left-over records by kind: {kinds}")
    assert kinds.get(1) and kinds.get(2), kinds  # spilled and in memory; sent, not acknowledged
    assert not path.exists() or path.read_text() == "", "the gate was shut: nothing handled"
    # The host hangs in the handler for good; the user kills it. Its lane dies with it.
    pid = bus.host_pid()
    assert pid is not None and bus.host_alive()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not bus.host_alive(), timeout_s=30, what="the hung host gone")
    gate.write_text("open")
    return folder, stderr


def _record_kinds(folder: Path) -> dict[int, int]:
    """How many records of each kind ``events.bin`` holds (0 op, 1 events, 2 events sent)."""
    head = struct.Struct(">BIQ")
    data = (folder / "events.bin").read_bytes()
    kinds: dict[int, int] = {}
    at = 0
    while at < len(data):
        kind, n, blobs = head.unpack_from(data, at)
        kinds[kind] = kinds.get(kind, 0) + 1
        at += head.size + n + blobs
    return kinds


def _check_arrived(path: Path, want: list[tuple[str, int]]) -> list[bool]:
    """Every wanted event once, in order, images intact; the redelivered marks, in order."""
    sink = _recording_sink()
    got, bad, marks = [], [], []
    for raw in path.read_text().splitlines():
        rec = json.loads(raw)
        got.append((rec["k"], rec["i"]))
        marks.append(rec["re"])
        if rec["k"] == "image" and rec["crc"] != sink.image_checksum(sink.make_image(rec["i"])):
            bad.append(rec["i"])
    assert len(want) == len(got), (len(want), len(got))
    assert want == got, next((w, g) for w, g in zip(want, got, strict=True) if w != g)
    assert [] == bad
    return marks


_ENV = {
    "GOGGLES_FINISH_STALL": "1",
    "GOGGLES_QUEUE_SIZE": "256",
    "GOGGLES_HOST_IMPORTS": "gated_sink",
}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_command_delivers_what_finish_gave_up_on(bus: Any, finished: Any) -> None:
    """The hung handler's events, kept at exit, arrive through ``python -m goggles_io.leftovers``:
    every one, once, in order, images intact; the folder is removed."""
    path, gate = bus.root / "handled.jsonl", bus.root / "gate"
    folder, _ = _produce_and_give_up(bus, finished, path, gate)
    cmd = subprocess.run(
        [sys.executable, "-m", "goggles_io.leftovers"],
        cwd=bus.root,
        env={**bus.env, "GOGGLES_HOST_IMPORTS": "gated_sink"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    print(f"command: {cmd.stdout.strip()} | {cmd.stderr.strip()}")
    assert 0 == cmd.returncode, (cmd.stdout, cmd.stderr)
    assert f"{_SCALARS + _IMAGES} left-over events from 1 folders" in cmd.stdout, cmd.stdout
    marks = _check_arrived(path, _expected(_SCALARS, _IMAGES))
    # What the hung host had been sent comes marked (it might have handled it), then the rest.
    sent = marks.index(False)
    assert 0 < sent and not any(marks[sent:]), (sent, marks.count(True))
    assert [] == sorted(folder.parent.glob("leftover-*"))
    again = subprocess.run(
        [sys.executable, "-m", "goggles_io.leftovers"],
        env=bus.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == again.returncode and "no left-over events" in again.stdout, again


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_next_producer_has_them_delivered_into_their_own_handlers(
    bus: Any, finished: Any
) -> None:
    """A second producer starts a deliverer for them: the left-overs reach the first
    producer's sink (its spec, its file), all of them once, in order; the second producer's own
    events reach its own sink only (ADR 0060); the folder is removed."""
    path, gate = bus.root / "handled.jsonl", bus.root / "gate"
    folder, _ = _produce_and_give_up(bus, finished, path, gate)
    env = {**_ENV, "GOGGLES_FINISH_STALL": "30"}
    own = bus.root / "own.jsonl"
    proc = bus.run("leftover_producer.py", own, gate, _MORE, 0, _SCALARS, **env)
    stdout, stderr = finished(proc, timeout_s=120)
    report = _last_json(stdout)
    assert (False, {}) == (report["timed_out"], report["transport"]), (report, stderr)
    assert "1 left-over folders of earlier runs" in stderr, stderr
    wait_until(lambda: not list(folder.parent.glob("leftover-*")), timeout_s=120, what="delivered")
    _check_arrived(path, _expected(_SCALARS, _IMAGES))
    _check_arrived(own, _expected(_MORE, 0, first=_SCALARS))
    assert "delivered pid" in Path(bus.host_log).read_text(), "the deliverer's line"


@pytest.mark.timeout(120)
def test_a_damaged_folder_is_reported_once_and_left(bus: Any, finished: Any) -> None:
    """A left-over folder of a dead process that cannot be read: the producer logs and
    finishes as usual; the deliverer it starts says so in one line (in the host's log, where
    its stderr goes) and leaves the folder, renamed ``unreadable-``."""
    spool = Path(os.environ["GOGGLES_SPOOL_DIR"])
    bad = spool / f"leftover-{os.getpid()}-1"  # our pid with another start time: a dead owner
    bad.mkdir(parents=True, mode=0o700)
    (bad / "manifest.json").write_text('{"format": 1, "events": 3}')
    (bad / "ops.msgpack").write_bytes(b"\x90")
    (bad / "events.bin").write_bytes(b"\x01\x00\x00\x00\xff" + b"garbage")
    proc = bus.run("producer.py", bus.jsonl, 50)
    stdout, stderr = finished(proc, timeout_s=60)
    assert "timed_out False" in stdout, (stdout, stderr)
    assert 50 == len(bus.lines())
    kept = spool / f"unreadable-{bad.name}"
    wait_until(lambda: (kept / "events.bin").exists(), timeout_s=60, what="the folder left")
    assert not bad.exists()
    log = Path(bus.host_log)
    wait_until(lambda: "cannot be delivered" in log.read_text(), timeout_s=60, what="its line")
    lines = [line for line in log.read_text().splitlines() if "cannot be delivered" in line]
    assert 1 == len(lines), log.read_text()
    assert f"unreadable-{bad.name}" in lines[0] and "cannot be delivered" not in stderr
