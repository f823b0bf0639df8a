"""The steps README.md and docs/ give a newcomer, typed as they are, through the real console
script: each did something wrong once (issue 24) and now does what the docs say."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support import started

ROOT = Path(__file__).resolve().parents[3]


def command() -> list[str]:
    script = shutil.which("telemetry")
    return [script] if script else [sys.executable, "-m", "experiment_telemetry"]


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **extra}


def telemetry(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(), *args], capture_output=True, text=True, timeout=300, env=env(), cwd=cwd
    )


@pytest.mark.slow
class TestWatchScenarios:
    def test_scenario_all_prints_each_alert_once(self, tmp_path: Path) -> None:
        """demo --scenario all: one ALERT line per alert in the runs' alerts.jsonl files."""
        done = telemetry("demo", "--scenario", "all", "--root", "runs", "--no-wandb", cwd=tmp_path)
        recorded = sum(
            len(p.read_text().splitlines()) for p in (tmp_path / "runs").glob("*/alerts.jsonl")
        )

        assert 0 == done.returncode, done.stderr
        assert recorded == done.stdout.count("ALERT ")
        assert recorded >= 6

    def test_each_run_keeps_only_its_own_metrics(self, tmp_path: Path) -> None:
        """After --scenario all, the first run's metrics.csv has the rows of that scenario run alone."""
        together = telemetry(
            "demo", "--scenario", "all", "--root", "all", "--no-wandb", cwd=tmp_path
        )
        alone = telemetry(
            "demo", "--scenario", "value-explosion", "--root", "one", "--no-wandb", cwd=tmp_path
        )
        first = sorted((tmp_path / "all").glob("*value-explosion*/metrics.csv"))[0]
        single = next((tmp_path / "one").glob("*/metrics.csv"))

        assert (0, 0) == (together.returncode, alone.returncode), together.stderr + alone.stderr
        assert len(single.read_text().splitlines()) == len(first.read_text().splitlines())

    def test_the_next_hint_of_a_watch_run_only_suggests_what_works(self, tmp_path: Path) -> None:
        """Every `telemetry ...` line a watch scenario prints under next: exits 0 when typed."""
        done = telemetry(
            "demo", "--scenario", "silence", "--root", "runs", "--no-wandb", cwd=tmp_path
        )
        hint = done.stdout[done.stdout.index("next:") :]
        suggested = re.findall(r"telemetry ((?:show|replay|plot) \S+(?: -o \S+)?)", hint)

        assert "plot" not in hint
        assert suggested
        for line in suggested:
            assert 0 == telemetry(*line.split(), cwd=tmp_path).returncode, line


@pytest.mark.slow
class TestYourExperiment:
    def test_replay_of_the_custom_event_run_with_import(self, tmp_path: Path) -> None:
        """docs/your-experiment.md's replay (with --import of the example) says identical."""
        example = ROOT / "examples" / "own_experiment.py"
        ran = subprocess.run(
            [sys.executable, str(example), "runs"],
            capture_output=True,
            text=True,
            timeout=300,
            env=env(),
            cwd=tmp_path,
        )
        run_dir = next((tmp_path / "runs").iterdir())

        done = telemetry("replay", str(run_dir), "--import", str(example), cwd=tmp_path)

        assert 0 == ran.returncode, ran.stderr
        assert 0 == done.returncode, done.stderr
        assert "identical" in done.stdout

    def test_replay_without_import_says_how(self, tmp_path: Path) -> None:
        """Without --import the unknown event kind is one line that names --import."""
        example = ROOT / "examples" / "own_experiment.py"
        subprocess.run([sys.executable, str(example), "runs"], env=env(), cwd=tmp_path,
                       capture_output=True, timeout=300, check=True)  # fmt: skip
        run_dir = next((tmp_path / "runs").iterdir())

        done = telemetry("replay", str(run_dir), cwd=tmp_path)

        assert 2 == done.returncode
        assert "grasp_attempted" in done.stderr and "--import" in done.stderr
        assert 1 == len(done.stderr.strip().splitlines())


class TestExamplesWithoutJax:
    @pytest.mark.parametrize("name", ["103_history.py", "104b_filters_jit.py"])
    def test_a_jax_example_without_jax_says_what_to_install(self, name: str) -> None:
        """Run where jax cannot be imported, the example prints one line naming the [jax] extra."""
        code = (
            "import runpy, sys; sys.modules['jax'] = None; "
            f"runpy.run_path({str(ROOT / 'examples' / name)!r}, run_name='__main__')"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env()
        )

        assert 0 != done.returncode
        assert "Traceback" not in done.stderr
        assert "[jax]" in done.stderr and 1 == len(done.stderr.strip().splitlines())


class TestShowAndUi:
    def test_show_reads_metrics_past_an_invalid_utf8_line(self, tmp_path: Path) -> None:
        """One line of metrics.csv that is not UTF-8 does not hide the run's metrics."""
        from goggles_io.runs import RunContext

        with RunContext("p", driver="test", slug="s", root=tmp_path) as run:
            (run.dir / "metrics.csv").write_bytes(b"step,loss\n0,1.5\n1,\xff\xfe\n2,0.5\n")

        done = telemetry("show", str(run.dir), cwd=tmp_path)

        assert 0 == done.returncode, done.stderr
        assert "loss = 0.5" in done.stdout

    @pytest.mark.parametrize(
        ("extra", "expected"),
        [
            ((), "showing collector db"),
            (("--host", "0.0.0.0"), "plain HTTP"),
        ],
        ids=["collector db without a runs folder", "public host warns of plain HTTP"],
    )
    def test_ui_starts_and_says_so(
        self, tmp_path: Path, extra: tuple[str, ...], expected: str
    ) -> None:
        """ui --collector-db X in a folder without runs/ starts; on 0.0.0.0 with a key it warns."""
        with started(
            [*command(), "ui", "--collector-db", "c.sqlite", "--port", "0", *extra],
            cwd=tmp_path,
            env=env(TELEMETRY_COLLECTOR_API_KEY="k"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            lines = [proc.stdout.readline() for _ in range(3 if extra else 2)]
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)

        assert any(expected in line for line in lines), lines
        assert not any("Traceback" in line for line in lines)


def test_alerts_jsonl_is_what_the_console_printed(tmp_path: Path) -> None:
    """The alerts a watch run records are the ones its console line names (same check, metric)."""
    done = telemetry(
        "demo", "--scenario", "non-finite", "--root", "runs", "--no-wandb", cwd=tmp_path
    )
    alerts_file = next((tmp_path / "runs").glob("*/alerts.jsonl"))
    alerts = [json.loads(line) for line in alerts_file.read_text().splitlines()]

    assert 0 == done.returncode, done.stderr
    assert [a["check"] for a in alerts] == re.findall(r"ALERT \S+\s+(\w+) in", done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0", "2"], ids=["in this process", "2 worker processes"])
def test_ctrl_c_ends_the_demo_with_one_line_and_no_traceback(tmp_path: Path, workers: str) -> None:
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) mid-run: exit 130,
    'interrupted' said once, no traceback from the demo or its workers, no repeated tally."""
    reader_env = {k: v for k, v in env().items() if not k.startswith("GOGGLES_")}
    # No GOGGLES_* knob, as a newcomer has; its own default socket all the same (a private
    # TMPDIR, no XDG_RUNTIME_DIR): a host another process on this machine runs must not take
    # the demo's console lines.
    (tmp_path / "tmp").mkdir()
    reader_env["TMPDIR"] = str(tmp_path / "tmp")
    reader_env.pop("XDG_RUNTIME_DIR", None)
    with started(
        [
            *command(),
            "demo",
            "--root",
            "runs",
            "--no-wandb",
            "--epochs",
            "60",
            "--workers",
            workers,
        ],
        cwd=tmp_path,
        env=reader_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as proc:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if " episode " in line:  # the loop is running
                break
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=120)
    output = "".join(lines) + rest

    assert 130 == proc.returncode, output
    assert "Traceback" not in output, output
    assert 1 == output.count("interrupted"), output
    assert output.count("finish:") <= 1, output
