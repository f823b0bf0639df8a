"""``telemetry demo --broker`` without the redis package, or with no Redis at the URL: one
line naming the cause, exit 2, no traceback, no run started."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from redis_server import free_port

_SRC = Path(__file__).parents[3] / "src"


def blocked_redis(root: Path) -> dict[str, str]:
    """An environment in which ``import redis`` fails as if the package were not installed."""
    blocker = root / "no-redis" / "redis"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'redis'\", name='redis')\n"
    )
    path = [str(blocker.parent), str(_SRC), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}


def _demo(root: Path, url: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    args = ["demo", "--root", str(root / "runs"), "--workers", "2", "--broker", url, "--no-wandb"]
    return subprocess.run(
        [sys.executable, "-m", "experiment_telemetry", *args],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


class TestDemoBrokerPreflight:
    def test_unreachable_redis_fails_fast_with_one_line(self, tmp_path: Path) -> None:
        """No Redis on the port: exit 2 within seconds, one line saying it is unreachable and
        what would happen to the events; the password is not shown; no run directory."""
        url = f"redis://:hunter2@127.0.0.1:{free_port()}/0"
        start = time.monotonic()
        out = _demo(tmp_path, url)
        took = time.monotonic() - start
        (line,) = out.stderr.strip().splitlines()

        assert 2 == out.returncode, out.stderr
        assert took < 15
        assert "Redis at redis://***@127.0.0.1:" in line
        assert "is unreachable" in line and "drop and count" in line
        assert "hunter2" not in out.stderr + out.stdout
        assert "Traceback" not in out.stderr
        assert [] == list((tmp_path / "runs").iterdir())

    def test_missing_redis_package_names_the_install_command(self, tmp_path: Path) -> None:
        """``import redis`` fails: exit 2, one line with the pip command of the broker extra."""
        out = _demo(tmp_path, f"redis://127.0.0.1:{free_port()}/0", blocked_redis(tmp_path))
        (line,) = out.stderr.strip().splitlines()

        assert 2 == out.returncode, out.stderr
        assert "'redis' package, which is not installed" in line
        assert "python3 -m pip install 'split-telemetry[broker]'" in line
        assert "Traceback" not in out.stderr
