"""A full handler lane (in-process bus): spill to its spool, then block, then drop (ADR 0025)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

import goggles_io as gg
from goggles_io import Event, Kind
from goggles_io.handlers.base import BaseHandler, register_handler
from support import wait_until


@register_handler
class Gate(BaseHandler):
    """Blocks in handle() until its gate opens; keeps the steps it saw."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(
        self, name: str | None = None, level: int = 0, when_full: str | None = None
    ) -> None:
        super().__init__(name=name, level=level)
        self.when_full = when_full
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.steps: list[int | None] = []
        self.sums: list[float] = []

    def handle(self, event: Event) -> None:
        self.entered.set()
        self.gate.wait(60)
        self.steps.append(event.step)
        if isinstance(event.payload, np.ndarray):
            self.sums.append(float(event.payload.sum()))


def _blocked(name: str = "gate", **kw: str) -> Gate:
    gate = Gate(name=name, **kw)
    gg.attach(gate)
    gg.get_logger("t", with_metrics=True).scalar("warm", 0.0, step=0)
    wait_until(gate.entered.is_set, what="worker inside handle()")
    return gate


def _spool_files(spool_dir: Path) -> list[Path]:
    return [p for p in spool_dir.rglob("*.seg")]


class TestSpill:
    def test_burst_past_the_queue_is_spilled_and_delivered_in_order(
        self, monkeypatch: pytest.MonkeyPatch, spool_dir: Path
    ) -> None:
        """Queue of 4, handler blocked, 500 scalars: all arrive, in order, via the spool."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        gate = _blocked()
        log = gg.get_logger("t", with_metrics=True)
        for step in range(1, 501):
            log.scalar("loss", 0.5, step=step)
        spilled = bool(_spool_files(spool_dir))
        gate.gate.set()
        report = gg.finish(timeout=30)

        assert spilled
        assert list(range(501)) == gate.steps
        assert (501, 0) == (report.handlers["gate"].delivered, report.dropped)

    def test_images_past_the_byte_budget_keep_their_pixels(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A 1 MiB byte budget and 40 images of 256 KiB: every image comes back from disk whole."""
        monkeypatch.setenv("GOGGLES_QUEUE_BYTES", str(1 << 20))
        gate = _blocked()
        log = gg.get_logger("t", with_metrics=True)
        images = [np.full((512, 512), i, dtype=np.uint8) for i in range(40)]
        for step, image in enumerate(images, start=1):
            log.image(image, name="img", step=step)
        gate.gate.set()
        gg.finish(timeout=30)

        assert [float(im.sum()) for im in images] == gate.sums

    def test_spool_folder_removed_by_finish(
        self, monkeypatch: pytest.MonkeyPatch, spool_dir: Path
    ) -> None:
        """After finish() no spool folder of this process is left."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "2")
        gate = _blocked()
        for step in range(1, 100):
            gg.get_logger("t", with_metrics=True).scalar("loss", 1.0, step=step)
        gate.gate.set()
        gg.finish(timeout=30)

        assert [] == list(spool_dir.glob("p*"))


class TestBlock:
    def test_block_waits_for_room_and_loses_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """GOGGLES_WHEN_FULL=block: the producer waits while the handler is slow, nothing drops."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        monkeypatch.setenv("GOGGLES_WHEN_FULL", "block")
        gate = _blocked()
        threading.Timer(0.3, gate.gate.set).start()
        start = time.monotonic()
        for step in range(1, 21):
            gg.get_logger("t", with_metrics=True).scalar("loss", 0.5, step=step)
        waited = time.monotonic() - start
        report = gg.finish(timeout=30)

        assert waited >= 0.25
        assert (list(range(21)), 0) == (gate.steps, report.dropped)

    def test_block_is_bounded_per_burst_then_drops(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A stuck handler: the burst waits GOGGLES_BLOCK_TIMEOUT in all, then drops and counts."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        monkeypatch.setenv("GOGGLES_WHEN_FULL", "block")
        monkeypatch.setenv("GOGGLES_BLOCK_TIMEOUT", "0.3")
        gate = _blocked()
        start = time.monotonic()
        for step in range(1, 101):
            gg.get_logger("t", with_metrics=True).scalar("loss", 0.5, step=step)
        waited = time.monotonic() - start
        gate.gate.set()
        report = gg.finish(timeout=30)

        assert 0.25 <= waited < 5.0
        assert 101 == report.handlers["gate"].delivered + report.handlers["gate"].dropped
        assert 96 == report.handlers["gate"].dropped

    def test_full_spool_falls_back_to_block_then_drop(
        self, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """A spool budget of 64 KiB: spill, then wait, then drop; logged == delivered + dropped."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        monkeypatch.setenv("GOGGLES_SPOOL_BYTES", str(64 * 1024))
        monkeypatch.setenv("GOGGLES_BLOCK_TIMEOUT", "0.2")
        gate = _blocked()
        log = gg.get_logger("t", with_metrics=True)
        for step in range(1, 20_001):
            log.scalar("loss", 0.5, step=step)
        gate.gate.set()
        report = gg.finish(timeout=60)
        stats = report.handlers["gate"]

        assert 0 < stats.dropped < 20_000 and 20_001 == stats.delivered + stats.dropped
        assert gate.steps == sorted(gate.steps)
        assert "spool budget full" in capfd.readouterr().err


class TestDrop:
    def test_handler_may_ask_for_drop_for_its_own_lane(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """when_full='drop' on the handler: its lane drops while another spills."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        strict = _blocked("strict", when_full="drop")
        spilling = _blocked("spilling")
        for step in range(1, 21):
            gg.get_logger("t", with_metrics=True).scalar("loss", 0.5, step=step)
        strict.gate.set()
        spilling.gate.set()
        report = gg.finish(timeout=30)

        assert 0 < report.handlers["strict"].dropped
        assert (0, 21) == (
            report.handlers["spilling"].dropped,
            report.handlers["spilling"].delivered,
        )
