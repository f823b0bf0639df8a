"""Worker tests run the goggles socket transport on a private socket (the package conftest
sets in-process), with the toy runtime importable by the worker processes."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

import goggles_io
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.harness import Experiment
from experiment_telemetry.workers import RuntimeSpec
from goggles_io.testing import reset_defaults

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def socket_bus(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private GOGGLES_SOCKET (short path: AF_UNIX limits it to ~100 bytes), a dedicated host
    that exits soon after its last client, and ``scripts/`` on the workers' path."""
    with tempfile.TemporaryDirectory(prefix="gg-workers-") as root:
        monkeypatch.setenv("GOGGLES_TRANSPORT", "socket")
        monkeypatch.setenv("GOGGLES_SOCKET", str(Path(root) / "bus.sock"))
        monkeypatch.setenv("GOGGLES_HOST_IDLE_TIMEOUT", "0.5")
        monkeypatch.setenv("GOGGLES_HOST_LOG", str(Path(root) / "host.log"))
        monkeypatch.syspath_prepend(str(SCRIPTS))
        reset_defaults()
        try:
            yield Path(root)
        finally:
            goggles_io.finish(10.0)
            reset_defaults()


class ToyExperiment(Experiment):
    """One epoch of ``plan`` (mode, seed) episodes; recognition verdicts only."""

    def __init__(
        self,
        root: Path,
        plan: Sequence[tuple[str, int]],
        *,
        num_workers: int = 2,
        runtime: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(
            root=root,
            num_workers=num_workers,
            config={"watch.enabled": False},
            console=False,
            progress=False,
            slug="toy",
        )
        self.plan = list(plan)
        self.runtime_kwargs = dict(runtime or {})

    def episodes(self, epoch: int) -> Iterator[EpisodeContext]:
        for episode, (mode, seed) in enumerate(self.plan):
            yield EpisodeContext(mode=mode, epoch=epoch, episode=episode, target="toy", seed=seed)

    def runtime_spec(self) -> RuntimeSpec:
        return RuntimeSpec(factory="toy_runtime:ToyRuntime", kwargs=self.runtime_kwargs)

    def episode_kwargs(self, context: EpisodeContext) -> dict[str, Any]:
        return {"seed": context.seed, "learn": self.learns(context)}


@pytest.fixture
def toy() -> type[ToyExperiment]:
    """The ``ToyExperiment`` class (test modules cannot import this conftest by name)."""
    return ToyExperiment
