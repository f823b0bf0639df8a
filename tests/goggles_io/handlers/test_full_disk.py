"""A full disk, for real: a 2 MiB tmpfs. Nothing torn, every loss counted, the run closes failed.

Mounting needs root (or CAP_SYS_ADMIN); without it these tests skip and say so.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import goggles_io as gg
from goggles_io.handlers.csv import CsvHandler
from goggles_io.handlers.storage import LOG_FILE, LocalStorageHandler
from goggles_io.runs import RunContext, read_kv, read_run, register_run


def _mount_tmpfs(target: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` on ``target``; the reason it could not be, or ``None``."""
    if os.geteuid() != 0:
        return "needs root to mount a small tmpfs (run the suite as root, e.g. in CI's container)"
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if done.returncode == 0 else f"mount -t tmpfs failed: {done.stderr.strip()}"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A fresh 2 MiB tmpfs, unmounted afterwards."""
    target = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    why = _mount_tmpfs(target, "2m")
    if why is not None:
        pytest.skip(why)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _lines_all_whole(path: Path) -> list[dict]:
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "torn last line"
    return [json.loads(line) for line in data.splitlines() if line.strip()]


class TestStorageOnFullDisk:
    def test_no_torn_line_and_every_lost_event_counted(
        self, small_disk: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """20,000 scalars + 400 histograms into 2 MiB: whole lines only; written + lost = logged."""
        handler = LocalStorageHandler(small_disk / "run", name="t.storage")
        gg.attach(handler)
        logger = gg.get_logger("t", with_metrics=True)
        rng = np.random.default_rng(0)
        for step in range(20_000):
            logger.scalar("loss", float(step), step=step)
            if step % 50 == 0:
                logger.histogram(rng.normal(size=2_000), step=step, name="weights")
        report = gg.finish(120.0)

        lines = _lines_all_whole(small_disk / "run" / LOG_FILE)
        losses = report.handlers["t.storage"].losses
        assert 20_400 == len(lines) + losses["write_failed"]
        assert losses["write_failed"] > 0 and report.lost >= losses["write_failed"]
        err = capfd.readouterr().err
        assert 1 == err.count("could not write"), err  # reported once...
        assert "write_failed" in err  # ...and counted at finish

    def test_csv_rows_whole_and_lost_rows_counted(self, small_disk: Path) -> None:
        """CsvHandler on a full disk: every row in the file is whole; the rest are counted."""
        handler = CsvHandler(small_disk / "csv", name="t.csv", rows_per_batch=100)
        handler.open()
        for step in range(120_000):
            handler.handle(gg.Event(kind=gg.Kind.METRIC, scope="global", step=step,
                                    payload={"loss": step * 1.000001, "acc": 0.5}))  # fmt: skip
        handler.close()

        data = (small_disk / "csv" / "metrics.csv").read_bytes()
        rows = data.splitlines()
        assert data.endswith(b"\n") and all(r.count(b",") == 3 for r in rows)  # step, wall_time
        assert 120_000 == (len(rows) - 1) + handler.losses()["write_failed"]


class TestRunContextOnFullDisk:
    def test_closes_failed_with_reason_and_no_temp_file(
        self, small_disk: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """run.kv says failed with the reason (not crashed), close() does not raise, no .tmp left."""
        run = RunContext(project="p", driver="d", slug="full", root=small_disk)
        storage = LocalStorageHandler(run.dir / "files", name="t.files")
        gg.attach(storage)
        register_run(run, storage)
        logger = gg.get_logger("t", with_metrics=True)
        for step in range(40_000):
            logger.scalar("loss", float(step), step=step)
        gg.finish(120.0)
        with contextlib.suppress(OSError), open(small_disk / "filler", "wb") as fh:
            while True:  # whatever room is left: now not even a temp file fits
                fh.write(b"\0" * 4096)
                fh.flush()
        run.close()

        info = read_run(run.dir)
        assert "failed" == info["status"]
        assert "not written" in info["reason"] or "run.kv" in info["reason"]
        assert [] == [p.name for p in run.dir.iterdir() if p.name.endswith(".tmp")]
        assert "failed" == read_kv(run.dir / "run.kv")["status"]
        assert "Traceback" not in capfd.readouterr().err
