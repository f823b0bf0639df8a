"""``telemetry show/runs/replay`` on damaged run files: one line naming file and line, never a traceback.

Each case runs the real command in a subprocess (``python -m experiment_telemetry``).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiment_telemetry.demo.experiment import run_demo
from experiment_telemetry.recorder import RUNTIME_EVENTS_FILE
from goggles_io.runs import RunContext, read_run


def telemetry(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GOGGLES_TRANSPORT": "inprocess"}
    return subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def make_run(root: Path, slug: str) -> Path:
    run = RunContext(project="p", driver="d", slug=slug, root=root)
    (run.dir / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
    run.close()
    return run.dir


def damage_kv(path: Path, line: str) -> None:
    path.write_bytes(path.read_bytes() + line.encode("utf-8", errors="surrogateescape"))


@pytest.fixture
def demo_dir(tmp_path: Path) -> Path:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return Path(run_demo(tmp_path / "demo", seed=0, num_epochs=1, wandb=False).run_dir)


class TestShowAndRuns:
    def test_invalid_utf8_run_kv_one_line_and_runs_lists_the_others(self, tmp_path: Path) -> None:
        """show: exit 2 with the file and line; runs: the damaged run is 'unreadable', the other listed."""
        good = make_run(tmp_path, "good")
        bad = make_run(tmp_path, "bad")
        (bad / "run.kv").write_bytes(b"run_id=x\nproject=\xff\xfe\n")

        shown = telemetry("show", str(bad))
        listed = telemetry("runs", str(tmp_path))

        assert 2 == shown.returncode and "Traceback" not in shown.stderr
        assert 1 == len(shown.stderr.strip().splitlines())
        assert "run.kv" in shown.stderr and "line 2" in shown.stderr
        assert 0 == listed.returncode and "Traceback" not in listed.stderr
        assert good.name in listed.stdout and "unreadable" in listed.stdout
        assert "line 2" in listed.stderr

    def test_invalid_utf8_config_kv(self, tmp_path: Path) -> None:
        """A damaged config.kv is one line on stderr, exit 2."""
        run = make_run(tmp_path, "cfg")
        (run / "config.kv").write_bytes(b"lr=0.1\nopt=\xff\n")

        shown = telemetry("show", str(run))

        assert (2, True) == (shown.returncode, "config.kv" in shown.stderr)
        assert "Traceback" not in shown.stderr

    @pytest.mark.parametrize(
        "field",
        ["heartbeat_s=abc", "heartbeat_s=nan", "pid=" + "1" * 24, "started=2024-01-01T00:00:00"],
    )
    def test_odd_fields_never_traceback(self, tmp_path: Path, field: str) -> None:
        """Unparseable or odd run.kv fields still show, and the run is listed."""
        run = make_run(tmp_path, "odd")
        damage_kv(run / "run.kv", field + "\n")

        shown = telemetry("show", str(run))
        listed = telemetry("runs", str(tmp_path))

        assert (0, 0) == (shown.returncode, listed.returncode), shown.stderr + listed.stderr
        assert run.name in listed.stdout

    def test_nan_heartbeat_still_marks_a_dead_run_crashed(self, tmp_path: Path) -> None:
        """heartbeat_s=nan falls back to the default period: a stale running run is crashed."""
        run = RunContext(project="p", driver="d", slug="nan", root=tmp_path)
        kv = (run.dir / "run.kv").read_text()
        run._closed.set()  # stop the heartbeat as if the process had died, leaving status=running
        run._beat.join(5)
        text = kv.replace(f"heartbeat_s={run.heartbeat_s}", "heartbeat_s=nan").replace(
            f"pid={os.getpid()}", "pid=999999999"
        )
        (run.dir / "run.kv").write_text(text)
        old = time.time() - 3600
        os.utime(run.dir / "heartbeat", (old, old))

        assert "crashed" == read_run(run.dir)["status"]


class TestReplay:
    def test_invalid_utf8_exit_2_not_1(self, demo_dir: Path) -> None:
        """Invalid UTF-8 in the event log: exit 2 (unreadable), one line naming file and line."""
        log = demo_dir / RUNTIME_EVENTS_FILE
        lines = log.read_bytes().splitlines(keepends=True)
        lines[3] = b'{"kind": "\xff"}\n'
        log.write_bytes(b"".join(lines))

        done = telemetry("replay", str(demo_dir))

        assert 2 == done.returncode and "Traceback" not in done.stderr
        assert "line 4" in done.stderr and "UTF-8" in done.stderr

    def test_torn_last_line_refused_then_skipped_with_tolerant(self, demo_dir: Path) -> None:
        """A torn last line: refused (exit 2) by default; --tolerant skips it and says so."""
        log = demo_dir / RUNTIME_EVENTS_FILE
        log.write_bytes(log.read_bytes() + b'{"kind": "learning_mod')

        strict = telemetry("replay", str(demo_dir))
        tolerant = telemetry("replay", "--tolerant", str(demo_dir))

        assert 2 == strict.returncode and "Traceback" not in strict.stderr
        assert "pass --tolerant" in strict.stderr and 1 == len(strict.stderr.splitlines())
        assert 0 == tolerant.returncode, tolerant.stderr
        assert "skipped 1 torn last line" in tolerant.stderr

    def test_different_is_exit_1(self, demo_dir: Path) -> None:
        """Stats that differ from the replay exit 1, distinct from unreadable (2)."""
        stats = demo_dir / "stats.jsonl"
        lines = stats.read_bytes().splitlines(keepends=True)
        stats.write_bytes(b"".join(lines[:-1]))

        done = telemetry("replay", str(demo_dir))

        assert 1 == done.returncode and "DIFFERENT" in done.stderr
