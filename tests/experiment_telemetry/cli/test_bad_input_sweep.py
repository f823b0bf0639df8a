"""Every ``telemetry`` subcommand against the inputs a newcomer gets wrong: a missing path, a file
where a directory belongs, a damaged run, an out-of-range number, a port in use.

Each case runs the real console script in a subprocess, named by its command line in the test
id, and must print one line on stderr (never a traceback) and exit non-zero.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiment_telemetry.demo.experiment import run_demo


def command() -> list[str]:
    """The installed console script, or the module it runs when the script is not on PATH."""
    script = shutil.which("telemetry")
    return [script] if script else [sys.executable, "-m", "experiment_telemetry"]


def telemetry(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GOGGLES_TRANSPORT": "inprocess"}
    return subprocess.run(
        [*command(), *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A folder with a good run, a damaged run (its run.kv not UTF-8, its event log garbage),
    a plain file and a port held by a listening socket."""
    root = tmp_path_factory.mktemp("sweep")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        good = Path(run_demo(root / "runs", seed=0, num_epochs=1, wandb=False).run_dir)
    damaged = root / "damaged"
    shutil.copytree(good, damaged)
    (damaged / "run.kv").write_bytes(b"run_id=\xff\xfe\nstatus=done\n")
    (damaged / "runtime_events.jsonl").write_bytes(b"\x00not json\n")
    (damaged / "stats.jsonl").write_bytes(b"{broken\n")
    afile = root / "notes.txt"
    afile.write_text("not a run\n")
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen(1)
    port = held.getsockname()[1]
    try:
        yield {
            "root": root,
            "good": good,
            "damaged": damaged,
            "file": afile,
            "port": Path(str(port)),
        }
    finally:
        held.close()


# (case id, argv with {good} {damaged} {file} {port} {root} placeholders)
CASES = [
    ("missing path", "runs {root}/nowhere"),
    ("missing path", "show {root}/nowhere"),
    ("missing path", "replay {root}/nowhere"),
    ("missing path", "plot {root}/nowhere -o {root}/x.png"),
    ("missing path", "ui {root}/nowhere --port 0"),
    ("missing path", "collector --db {root}/nowhere/c.sqlite --port 0"),
    ("missing path", "plot {good} -o {root}/nowhere/x.png"),
    ("file for a directory", "runs {file}"),
    ("file for a directory", "show {file}"),
    ("file for a directory", "replay {file}"),
    ("file for a directory", "plot {file} -o {root}/x.png"),
    ("file for a directory", "ui {file} --port 0"),
    ("file for a directory", "demo --root {file} --no-wandb"),
    ("file for a directory", "collector --db {root} --port 0"),
    ("file for a directory", "plot {good} -o {root}"),
    ("damaged run", "show {damaged}"),
    ("damaged run", "replay {damaged}"),
    ("damaged run", "plot {damaged} -o {root}/x.png"),
    ("out-of-range number", "demo --epochs 0 --root {root}/r --no-wandb"),
    ("out-of-range number", "demo --workers -1 --root {root}/r --no-wandb"),
    ("out-of-range number", "show {good} --alerts -1"),
    ("out-of-range number", "ui {good} --port 99999"),
    ("out-of-range number", "ui {good} --port -1"),
    ("out-of-range number", "collector --port 70000 --db {root}/c.sqlite"),
    ("port in use", "ui {good} --port {port}"),
    ("port in use", "collector --port {port} --db {root}/c2.sqlite"),
    ("wrong kind of value", "plot {good} -o {root}/x.txt"),
    ("unresolvable host", "collector --host nonexistent.invalid --port 0 --db {root}/c3.sqlite"),
    ("unknown option", "show {good} --no-such-option"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "argv"), CASES, ids=[f"{case}: telemetry {argv}" for case, argv in CASES]
)
def test_one_line_and_a_non_zero_exit(place: dict[str, Path], case: str, argv: str) -> None:
    """The command prints one line on stderr, no traceback, and exits non-zero."""
    args = argv.format(**{k: str(v) for k, v in place.items()}).split()

    done = telemetry(args, cwd=place["root"])

    assert done.returncode != 0, f"{case}: exit 0\n{done.stdout}"
    assert "Traceback" not in done.stderr, done.stderr
    assert 1 == len(done.stderr.strip().splitlines()), done.stderr


def test_runs_lists_a_damaged_run_among_the_others(place: dict[str, Path]) -> None:
    """runs over a root holding a damaged run lists it as unreadable, one line says why, exit 0.

    The one deliberate exit 0 of the sweep: one damaged run must not hide the others.
    """
    mixed = place["root"] / "mixed"
    if not mixed.exists():
        shutil.copytree(place["good"], mixed / "good")
        shutil.copytree(place["damaged"], mixed / "damaged")

    done = telemetry(["runs", str(mixed)], cwd=place["root"])

    assert 0 == done.returncode, done.stderr
    assert "unreadable" in done.stdout and "Traceback" not in done.stderr
    assert 1 == len(done.stderr.strip().splitlines()), done.stderr
