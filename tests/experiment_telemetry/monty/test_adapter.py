"""The adapter's pieces on their own: lazy imports, the one-line errors, Monty's telemetry
events through the handler, the step hook's robustness, pickling, Hydra finding the configs.

Tests marked ``needs_monty`` use the installed Monty (no experiment run); the others need none.
"""

from __future__ import annotations

import json
import logging
import logging.config
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiment_telemetry.monty import _session
from goggles_io.runs import read_run
from monty_support import need_monty

SRC = Path(__file__).resolve().parents[3] / "src"


def python(code: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on this checkout's ``src``."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SRC), **(env or {})},
    )


def test_importing_the_adapter_imports_nothing_of_monty() -> None:
    """``experiment_telemetry.monty`` and every module Monty's configs name load without
    ``tbp`` (the adapter imports Monty only where it reads it, in the step hook)."""
    result = python("""
        import sys
        import experiment_telemetry.monty, experiment_telemetry.monty.events
        import experiment_telemetry.monty.report, experiment_telemetry.monty.handler
        import experiment_telemetry.monty.telemetry, experiment_telemetry.replay
        import experiment_telemetry.aggregators.standard
        print(sorted(m for m in sys.modules if m == "tbp" or m.startswith("tbp.")))
    """)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_missing_monty_is_one_line() -> None:
    """Without Monty on the path, the first use says so in one line naming the fix."""
    result = python("""
        import sys
        from experiment_telemetry.monty import MontyUnavailableError, require_monty
        sys.path[:] = [p for p in sys.path if "site-packages" not in p]
        try:
            require_monty()
        except MontyUnavailableError as exc:
            print(str(exc))
    """)

    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1
    assert "needs tbp-monty 0.55, which is not installed (docs/monty.md" in result.stdout


def test_a_monty_version_the_adapter_does_not_know_is_one_line(tmp_path: Path) -> None:
    """A tbp-monty the adapter was not checked against is refused in one line, unless
    ``SPLIT_TELEMETRY_MONTY_ANY_VERSION=1``; the run module exits 2 with it."""
    dist = tmp_path / "tbp_monty-0.99.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tbp.monty\nVersion: 0.99.1\n")
    code = """
        from experiment_telemetry.monty import MontyUnavailableError, require_monty
        try:
            print(require_monty())
        except MontyUnavailableError as exc:
            print(str(exc))
    """
    path = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(SRC)])}
    refused = python(code, env=path)
    allowed = python(code, env={**path, "SPLIT_TELEMETRY_MONTY_ANY_VERSION": "1"})
    run = subprocess.run(
        [sys.executable, "-m", "experiment_telemetry.monty.run", "experiment=x"],
        capture_output=True, text=True, timeout=120, check=False, env={**os.environ, **path},
    )  # fmt: skip

    assert refused.stdout.strip().startswith(
        "tbp-monty 0.99.1 is a version the Monty adapter does not know"
    )
    assert refused.stdout.count("\n") == 1
    assert allowed.stdout.strip() == "0.99.1"
    assert (run.returncode, run.stderr.count("\n")) == (2, 1)
    assert "does not know" in run.stderr


@pytest.fixture
def monty_logging(tmp_path: Path) -> Iterator[Path]:
    """Real Monty telemetry loggers in this process, undone afterwards: Monty's logger factory
    (installed when ``tbp.monty.telemetry`` is first imported) and the adapter's wrapper are
    taken off the logging manager, and the adapter's run is closed."""
    need_monty()
    manager = logging.Logger.manager
    saved = manager.loggerClass
    import tbp.monty.telemetry  # noqa: F401

    monty_factory = manager.loggerClass
    try:
        yield tmp_path
    finally:
        session = _session.current()
        if session is not None and not session.closed:
            session.close()
        for name in [n for n in manager.loggerDict if n.startswith("telemetry.tbp")]:
            logger = logging.getLogger(name)
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
                handler.close()
        manager.loggerClass = saved if saved is not monty_factory else None


def test_montys_own_events_reach_the_run_through_its_config(monty_logging: Path) -> None:
    """Configured as Monty configures telemetry (``dictConfig`` of ``+telemetry=split_telemetry``),
    the handler records each real ``TelemetryEvent`` in the run's event log with its kind,
    fields (dumped at emit time: a later change of a live extra is not seen; numpy arrays and
    enums as plain JSON), logger, level and time; a non-schema log line is kept as ``log``."""
    import enum

    import numpy as np
    from tbp.monty.telemetry import getTelemeter
    from tbp.monty.telemetry.schemas import TelemetryEvent

    class Phase(enum.Enum):
        MATCHING = "matching"

    # Monty's modules make their telemeters at import, before its logging setup runs.
    telemeter = getTelemeter("tbp.monty.frameworks.models.fake")
    logging.config.dictConfig({
        "version": 1, "disable_existing_loggers": False,
        "handlers": {"ours": {"class": "experiment_telemetry.monty.telemetry.TelemetryHandler",
                              "level": "INFO", "root": str(monty_logging)}},
        "loggers": {"telemetry.tbp.monty": {"handlers": ["ours"], "level": "INFO"}},
    })  # fmt: skip
    live = {"poses": np.arange(3.0)}
    telemeter.info(TelemetryEvent(kind="GlobalMatchingStep", matching_steps=1))
    telemeter.info(TelemetryEvent(kind="Odd", live=live, phase=Phase.MATCHING, big=np.eye(2)))
    live["poses"] = np.zeros(3)
    telemeter.debug(TelemetryEvent(kind="BelowTheLevel"))
    telemeter.info("a plain line %s", "here")
    handler = next(h for h in logging.getLogger("telemetry.tbp.monty").handlers if h.name == "ours")
    handler.close()
    run_dir = next(p for p in monty_logging.iterdir() if (p / "run.kv").is_file())
    lines = [
        json.loads(line) for line in (run_dir / "runtime_events.jsonl").read_text().splitlines()
    ]

    assert [line["monty_kind"] for line in lines] == ["GlobalMatchingStep", "Odd", "log"]
    assert json.loads(lines[0]["fields"]) == {"kind": "GlobalMatchingStep", "matching_steps": 1}
    assert json.loads(lines[1]["fields"]) == {
        "kind": "Odd", "live": {"poses": [0.0, 1.0, 2.0]}, "phase": "matching",
        "big": [[1.0, 0.0], [0.0, 1.0]],
    }  # fmt: skip
    assert json.loads(lines[2]["fields"]) == {"kind": "log", "message": "a plain line here"}
    assert {(e["logger"], e["level"], e["run_id"], e["episode"]) for e in lines[:2]} == {
        ("telemetry.tbp.monty.frameworks.models.fake", "INFO", run_dir.name, 0)
    }
    assert read_run(run_dir)["status"] == "done"


def test_the_step_hook_never_breaks_montys_loop(monty_logging: Path) -> None:
    """A model the hook cannot read (no learning modules, a module raising) costs an error
    count and one warning; Monty's actions come back untouched."""
    from experiment_telemetry.monty import StepHook

    class Broken:
        @property
        def learning_modules(self) -> list[object]:
            raise RuntimeError("not today")

    hook = StepHook(root=str(monty_logging))
    actions = [object()]
    try:
        assert hook(None, Broken(), [], 0, {}, actions) is actions
        assert hook(None, Broken(), [], 1, {}, actions) is actions
    finally:
        hook.close()

    assert hook.errors == 2


def test_pickled_pieces_are_fresh_copies_not_the_run(monty_logging: Path) -> None:
    """Monty saves its config (the stats handler and step hook in it) with ``torch.save`` after
    each epoch: a copy carries the settings, never the open run or its files."""
    from experiment_telemetry.monty import StatsHandler, StepHook

    handler = StatsHandler(root=str(monty_logging), console=False)
    hook = StepHook(root=str(monty_logging))
    copies = pickle.loads(pickle.dumps([handler, hook]))

    assert [type(c).__name__ for c in copies] == ["StatsHandler", "StepHook"]
    assert copies[0]._settings == handler._settings and copies[0]._held is None
    assert copies[1]._held is None
    assert not any((p / "run.kv").exists() for p in monty_logging.iterdir())


def test_hydra_finds_the_configs_beside_montys() -> None:
    """The search-path plugin puts ``pkg://experiment_telemetry.monty.conf`` on Monty's search
    path: ``+telemetry=``, ``logging=`` and ``+step_hook=split_telemetry`` compose, Monty's
    CSV handler kept beside ours."""
    need_monty()
    result = python(
        """
        from hydra import compose, initialize_config_module
        import tbp.monty.hydra  # Monty's resolvers
        with initialize_config_module(config_module="tbp.monty.conf", version_base=None):
            cfg = compose("experiment", overrides=[
                "experiment=test/evidence_lm/evidence_mujoco", "logging=split_telemetry",
                "+telemetry=split_telemetry", "+step_hook=split_telemetry"])
        c = cfg.experiment.config
        print(c.telemetry.handlers.split_telemetry["class"])
        print([h._target_ for h in c.logging.monty_data_logger.handlers])
        print(c.step_hook._target_)
    """,
        env={"MONTY_LOGS": "/tmp"},
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "experiment_telemetry.monty.telemetry.TelemetryHandler",
        "['tbp.monty.frameworks.loggers.monty_handlers.BasicCSVStatsHandler', "
        "'experiment_telemetry.monty.handler.StatsHandler']",
        "experiment_telemetry.monty.hook.StepHook",
    ]


@pytest.mark.parametrize(
    ("leaving_with", "status"),
    [(None, "done"), (RuntimeError("Monty broke"), "failed"), (KeyboardInterrupt(), "interrupted")],
)
def test_the_run_ends_as_monty_leaves(
    monty_logging: Path, leaving_with: BaseException | None, status: str
) -> None:
    """Monty closes its handlers and hook in its ``__exit__``: the last piece to let go closes
    the run with the status of the exception Monty is leaving with."""
    from experiment_telemetry.monty import StatsHandler

    handler = StatsHandler(root=str(monty_logging), console=False)
    session = _session.acquire()
    run_dir = session.run_dir
    assert run_dir is not None and read_run(run_dir)["status"] == "running"
    if leaving_with is None:
        _session.release(session)
    else:
        try:
            raise leaving_with
        except BaseException:  # inside Monty's __exit__, sys.exc_info() is the exception
            _session.release(session)
    handler.close()

    assert read_run(run_dir)["status"] == status
