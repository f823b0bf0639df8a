"""The Python snippets a newcomer copies first do what their comments say."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _snippet(doc: str, heading: str) -> str:
    """The first ```python block after ``heading`` in ``doc``."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    found = re.search(r"```python\n(.*?)```", after, re.S)
    assert found is not None, f"{doc}: no python block after {heading!r}"
    return found.group(1)


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = cwd / "snippet.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env.update(GOGGLES_SOCKET=str(cwd / "bus.sock"), GOGGLES_HOST_IDLE_TIMEOUT="0.5")
    env["PYTHONPATH"] = str(ROOT / "src")
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_readme_goggles_snippet_prints_its_text_and_writes_its_metric(tmp_path: Path) -> None:
    """README's first goggles snippet: the info line is printed, the scalar is in metrics.csv."""
    done = _run(_snippet("README.md", "## Logging like robo-goggles"), tmp_path)

    assert 0 == done.returncode, done.stderr
    assert "step 1: loss=0.3" in done.stderr  # the console writes to stderr, as robo-goggles
    rows = list(csv.DictReader((tmp_path / "metrics.csv").open(encoding="utf-8")))
    assert ["0.3"] == [row["loss"] for row in rows]


def test_run_dir_snippet_puts_the_handlers_files_in_the_run_folder(tmp_path: Path) -> None:
    """docs/runs-and-sinks.md: files of handlers made on run.dir sit beside run.kv."""
    done = _run(_snippet("docs/runs-and-sinks.md", "### Files in the run's folder"), tmp_path)

    assert 0 == done.returncode, done.stderr
    run_dir = tmp_path / done.stdout.strip().splitlines()[-1]
    assert run_dir.parent == tmp_path / "runs"
    assert {"run.kv", "metrics.csv", "log.jsonl"} <= {p.name for p in run_dir.iterdir()}
    assert "status=done" in (run_dir / "run.kv").read_text(encoding="utf-8")
