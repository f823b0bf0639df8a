"""Tests for goggles_io.runs: run directory, status lifecycle, config once, crash detection."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import goggles_io as gg
from goggles_io.exceptions import ConfigConflictError, ConfigurationError
from goggles_io.runs import (
    RunContext,
    last_metrics,
    list_runs,
    read_kv,
    read_run,
    register_run,
    write_kv,
)
from support import started, wait_until

SCRIPT = Path(__file__).parent / "scripts" / "run_until_signal.py"


class Recorder:
    """A collaborator with the optional run hooks, recording what it was told."""

    def __init__(self) -> None:
        self.configs: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []

    def record_config(self, mapping: dict[str, Any]) -> None:
        self.configs.append(mapping)

    def register_run(self, info: dict[str, Any]) -> None:
        self.runs.append(info)


def make_run(tmp_path: Path, **kwargs: Any) -> RunContext:
    return RunContext(
        project="proj", driver="train.py", slug="sac cheetah", root=tmp_path, **kwargs
    )


class TestRunContext:
    def test_run_kv_written_at_construction(self, tmp_path: Path) -> None:
        """run.kv exists with identity fields and status=running before any training."""
        run = make_run(tmp_path, seed=7)
        kv = read_kv(run.dir / "run.kv")
        run.close()

        assert ("running", "proj", "train.py", "7", run.id) == (
            kv["status"],
            kv["project"],
            kv["driver"],
            kv["seed"],
            kv["run_id"],
        )
        assert {"host", "pid", "user", "python", "started"} <= kv.keys()

    def test_git_commit_recorded_inside_a_repository(self, tmp_path: Path) -> None:
        """Inside a git checkout the commit and dirty flag are recorded."""
        run = make_run(tmp_path)
        run.close()
        kv = read_kv(run.dir / "run.kv")

        assert 40 == len(kv["git_commit"])
        assert kv["git_dirty"] in ("True", "False")

    def test_close_writes_done_and_finished(self, tmp_path: Path) -> None:
        """close() writes status=done and a finished time."""
        run = make_run(tmp_path)
        run.close()
        kv = read_kv(run.dir / "run.kv")

        assert "done" == kv["status"]
        assert "finished" in kv

    def test_exception_marks_failed(self, tmp_path: Path) -> None:
        """An exception leaving the with-block marks the run failed and propagates."""
        with pytest.raises(RuntimeError), make_run(tmp_path) as run:
            raise RuntimeError("boom")

        assert "failed" == read_kv(run.dir / "run.kv")["status"]

    def test_keyboard_interrupt_marks_interrupted(self, tmp_path: Path) -> None:
        """Ctrl-C inside the with-block marks the run interrupted."""
        with pytest.raises(KeyboardInterrupt), make_run(tmp_path) as run:
            raise KeyboardInterrupt

        assert "interrupted" == read_kv(run.dir / "run.kv")["status"]

    def test_sigterm_marks_interrupted(self, tmp_path: Path) -> None:
        """SIGTERM to a process inside `with RunContext` marks its run interrupted."""
        with started(
            [sys.executable, str(SCRIPT), str(tmp_path)], stdout=subprocess.PIPE, text=True
        ) as proc:
            assert proc.stdout is not None
            run_dir = Path(proc.stdout.readline().strip())
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)

        assert "interrupted" == read_kv(run_dir / "run.kv")["status"]

    def test_killed_process_reads_as_crashed(self, tmp_path: Path) -> None:
        """A run whose process was SIGKILLed keeps status=running on disk and reads as crashed."""
        with started(
            [sys.executable, str(SCRIPT), str(tmp_path)], stdout=subprocess.PIPE, text=True
        ) as proc:
            assert proc.stdout is not None
            run_dir = Path(proc.stdout.readline().strip())
            proc.kill()
            proc.wait(timeout=30)

        assert "running" == read_kv(run_dir / "run.kv")["status"]
        assert "crashed" == read_run(run_dir)["status"]

    def test_heartbeat_is_touched(self, tmp_path: Path) -> None:
        """The heartbeat file is rewritten periodically while the run is open."""
        run = make_run(tmp_path, heartbeat_s=0.02)
        first = (run.dir / "heartbeat").read_text()
        wait_until(lambda: (run.dir / "heartbeat").read_text() != first, what="heartbeat")
        run.close()

    def test_checkpoint_path_stays_inside_run_dir(self, tmp_path: Path) -> None:
        """A checkpoint name with path separators is sanitised into the run directory."""
        run = make_run(tmp_path)
        path = run.checkpoint_path("../../etc/passwd")
        run.close()

        assert run.dir / "checkpoints" == path.parent

    def test_empty_checkpoint_name_rejected(self, tmp_path: Path) -> None:
        """A checkpoint name with nothing usable is an error naming the value."""
        run = make_run(tmp_path)
        with pytest.raises(ConfigurationError, match=r"'\.\./'"):
            run.checkpoint_path("../")
        run.close()

    def test_empty_project_rejected(self, tmp_path: Path) -> None:
        """An empty project is rejected, naming the parameter."""
        with pytest.raises(ConfigurationError, match="project"):
            RunContext(project="", driver="d", slug="s", root=tmp_path)

    def test_non_positive_heartbeat_rejected(self, tmp_path: Path) -> None:
        """heartbeat_s <= 0 is rejected, naming the parameter and value."""
        with pytest.raises(ConfigurationError, match=r"heartbeat_s.*0"):
            make_run(tmp_path, heartbeat_s=0)


class TestSetConfig:
    def test_written_to_kv_and_yaml(self, tmp_path: Path) -> None:
        """Config is written to config.kv and config.yaml."""
        run = make_run(tmp_path)
        run.set_config("algo", "sac")
        run.set_config({"lr": 3e-4, "layers": [64, 64]})
        run.close()

        assert {"algo": "sac", "lr": "0.0003", "layers": "[64, 64]"} == read_kv(
            run.dir / "config.kv"
        )
        assert {"algo": "sac", "lr": 3e-4, "layers": [64, 64]} == yaml.safe_load(
            (run.dir / "config.yaml").read_text()
        )

    def test_same_value_twice_is_noop(self, tmp_path: Path) -> None:
        """Recording the same key with the same value again changes nothing."""
        run = make_run(tmp_path)
        run.set_config("algo", "sac")
        run.set_config("algo", "sac")
        run.close()

        assert {"algo": "sac"} == run.config

    def test_conflicting_value_names_key(self, tmp_path: Path) -> None:
        """Recording a key again with another value raises naming the key and keeps the first."""
        run = make_run(tmp_path)
        run.set_config("algo", "sac")
        with pytest.raises(ConfigConflictError, match="'algo'") as caught:
            run.set_config("algo", "ppo")
        run.close()

        assert ("algo", "ppo", "sac") == (
            caught.value.key,
            caught.value.value,
            caught.value.previous,
        )
        assert isinstance(caught.value, ConfigurationError)
        assert {"algo": "sac"} == read_kv(run.dir / "config.kv")

    def test_unsupported_value_rejected(self, tmp_path: Path) -> None:
        """A value that is not a plain scalar is rejected naming the key."""
        run = make_run(tmp_path)
        with pytest.raises(ConfigurationError, match="'net'"):
            run.set_config("net", object())
        run.close()

    def test_malformed_key_rejected(self, tmp_path: Path) -> None:
        """A key with '=' or a newline is rejected."""
        run = make_run(tmp_path)
        with pytest.raises(ConfigurationError, match="a=b"):
            run.set_config("a=b", 1)
        run.close()

    def test_forwarded_to_registered_handlers(self, tmp_path: Path) -> None:
        """Config recorded before and after register_run reaches the handler once each."""
        run = make_run(tmp_path)
        handler = Recorder()
        run.set_config("algo", "sac")
        register_run(run, handler)
        run.set_config("lr", 0.1)
        run.set_config("lr", 0.1)
        run.close()

        assert [{"algo": "sac"}, {"lr": 0.1}] == handler.configs


class TestForwardingToTheBus:
    def test_attached_handler_reached_through_the_bus_instance(self, tmp_path: Path) -> None:
        """For an attached name, set_config reaches the instance the bus kept, not a later one."""
        kept, later = (
            gg.CsvHandler(tmp_path / "kept", name="csv"),
            gg.CsvHandler(tmp_path / "later", name="csv"),
        )
        gg.attach(kept)
        gg.attach(later)
        run = make_run(tmp_path / "runs")
        register_run(run, later)
        run.set_config("lr", 0.1)
        gg.flush()
        run.close()

        assert {"lr": "0.1"} == dict(read_kv(tmp_path / "kept" / "metrics.config.kv"))
        assert not (tmp_path / "later" / "metrics.config.kv").exists()

    def test_unattached_handler_called_directly(self, tmp_path: Path) -> None:
        """A handler never attached gets record_config as a direct call, at once."""
        handler = gg.CsvHandler(tmp_path / "csv")
        run = make_run(tmp_path / "runs")
        register_run(run, handler)
        run.set_config("lr", 0.1)
        run.close()

        assert {"lr": "0.1"} == dict(read_kv(tmp_path / "csv" / "metrics.config.kv"))


class TestRegisterRun:
    def test_handler_told_run_identity(self, tmp_path: Path) -> None:
        """register_run passes the run.kv fields to handlers that accept them."""
        run = make_run(tmp_path)
        handler = Recorder()
        register_run(run, handler)
        run.close()

        assert run.id == handler.runs[0]["run_id"]

    def test_handler_without_hooks_accepted(self, tmp_path: Path) -> None:
        """A handler with neither hook is accepted silently."""
        run = make_run(tmp_path)
        register_run(run, object())
        run.close()


class TestReadRun:
    def test_last_step_from_metrics_csv(self, tmp_path: Path) -> None:
        """The last step comes from the last complete row of metrics.csv."""
        run = make_run(tmp_path)
        (run.dir / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n2,0.25\n3,0.")
        run.close()

        assert 2 == read_run(run.dir)["last_step"]

    def test_last_step_from_events_jsonl(self, tmp_path: Path) -> None:
        """Without metrics.csv, the last step comes from events.jsonl, skipping a torn line."""
        run = make_run(tmp_path)
        (run.dir / "events.jsonl").write_text(
            '{"kind": "metric", "step": 4, "payload": {"loss": 1}}\n{"kind": "met'
        )
        run.close()

        assert 4 == read_run(run.dir)["last_step"]

    def test_last_step_and_metrics_from_a_local_storage_run(self, tmp_path: Path) -> None:
        """A run LocalStorageHandler wrote (log.jsonl) gives its last step and metric values."""
        run = make_run(tmp_path)
        gg.attach(gg.LocalStorageHandler(run.dir, name="runs.storage"))
        log = gg.get_logger("r", with_metrics=True)
        log.scalar("loss", 1.0, step=4)
        log.scalar("loss", 0.5, step=5)
        gg.finish(timeout=30)
        run.close()

        assert (5, {"loss": 0.5}) == (read_run(run.dir)["last_step"], last_metrics(run.dir))

    def test_list_runs_reports_each_status(self, tmp_path: Path) -> None:
        """list_runs returns every run under root with its status, oldest first."""
        done = make_run(tmp_path)
        done.close()
        running = make_run(tmp_path)

        statuses = {r["run_id"]: r["status"] for r in list_runs(tmp_path)}
        running.close()

        assert {done.id: "done", running.id: "running"} == statuses

    def test_missing_root_lists_nothing(self, tmp_path: Path) -> None:
        """A root that does not exist holds no runs."""
        assert [] == list_runs(tmp_path / "absent")


class TestKv:
    def test_roundtrip_escapes_newlines(self, tmp_path: Path) -> None:
        """Values with newlines and backslashes survive a write/read round trip."""
        data = {"a": "x\ny", "b": "c:\\d", "c": "k=v"}
        write_kv(tmp_path / "f.kv", data)

        assert data == read_kv(tmp_path / "f.kv")
