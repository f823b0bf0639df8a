"""``telemetry diff RUN RUN...`` on real run directories, as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from goggles_io.runs import RunContext


def telemetry(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "experiment_telemetry", *args], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip


def make_run(root: Path, slug: str, config: str) -> Path:
    ctx = RunContext(project="p", driver="d", slug=slug, root=root)
    (ctx.dir / "config.kv").write_text(config)
    ctx.close()
    return ctx.dir


class TestDiff:
    def test_prints_the_differing_keys(self, tmp_path: Path) -> None:
        """Two runs whose seed differs: one row for seed, exit 0."""
        a = make_run(tmp_path, "a", "seed=1\nlr=0.1\n")
        b = make_run(tmp_path, "b", "seed=2\nlr=1e-1\n")
        done = telemetry("diff", str(a), str(b))

        assert 0 == done.returncode
        assert ["KEY", "seed"] == [line.split()[0] for line in done.stdout.splitlines()]

    def test_json_and_nothing_differs_exit_0(self, tmp_path: Path) -> None:
        """Equal configs exit 0; --json gives every key with its typed values."""
        a = make_run(tmp_path, "a", "lr=0.1\n")
        b = make_run(tmp_path, "b", "lr=1e-1\n")
        done = telemetry("diff", "--json", str(a), str(b))

        assert 0 == done.returncode
        assert [
            {"key": "lr", "values": [0.1, 0.1], "present": [True, True], "differs": False}
        ] == json.loads(done.stdout)["rows"]

    def test_a_path_that_is_not_a_run_is_one_line_exit_2(self, tmp_path: Path) -> None:
        """A folder that is not a run directory is one line on stderr and exit 2."""
        a = make_run(tmp_path, "a", "lr=0.1\n")
        (tmp_path / "empty").mkdir()
        done = telemetry("diff", str(a), str(tmp_path / "empty"))

        assert (2, 1) == (done.returncode, len(done.stderr.strip().splitlines()))
        assert "is not a run directory" in done.stderr


class TestExitCode:
    def test_exit_code_says_whether_anything_differs(self, tmp_path: Path) -> None:
        """--exit-code: 1 when a value differs, 0 when none does (as git diff --exit-code)."""
        a = make_run(tmp_path, "a", "lr=0.1\n")
        b = make_run(tmp_path, "b", "lr=0.2\n")
        c = make_run(tmp_path, "c", "lr=0.1\n")

        differ = telemetry("diff", "--exit-code", str(a), str(b))
        same = telemetry("diff", "--exit-code", str(a), str(c))

        assert (1, 0) == (differ.returncode, same.returncode)
