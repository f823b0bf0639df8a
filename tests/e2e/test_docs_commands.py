"""Every shell command README.md and docs/*.md give runs as written, on a fresh run directory.

Commands are the lines of fenced ``bash``/``sh`` blocks. A line whose comment starts with
``manual:`` is not run (it names why: another machine, a network, a service on a fixed port)
and is listed as skipped. The commands of one file run in order in one fresh folder, so
``telemetry demo`` then ``telemetry show runs/<run>`` works as it does for a reader:
``<run>`` / ``<run id>`` stand for the newest run the commands before made, ``<other run>``
for the one before it. An install in front
of ``&&`` is not repeated (the suite runs installed); ``NAME=value`` words in front set the
command's environment and ``~`` is the file's folder; a server (``telemetry ui``,
``telemetry collector``) is started, must print its URL, and stops on Ctrl-C with exit 0; it
binds a free port (``--port 0``) so the check never collides with another process.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support import started

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"```(?:bash|sh|shell)\n(.*?)```", re.S)
_INSTALL = re.compile(r"^(?:python3 -m pip install [^&]*?&& )+")
_ASSIGN = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")
_SERVERS = ("telemetry ui", "telemetry collector")
_PLACEHOLDER = re.compile(r"runs/<run(?: id)?>")
_OTHER = re.compile(r"runs/<other run>")


def _commands() -> list[tuple[Path, int, str, str]]:
    """(file, position, command, why it is not run or '') for every command line of the docs."""
    found = []
    for doc in DOCS:
        position = 0
        for block in _BLOCK.findall(doc.read_text(encoding="utf-8")):
            for line in block.splitlines():
                code, _, comment = line.partition(" #")
                code = code.strip()
                if not code or code.startswith("#"):
                    continue
                why = (
                    comment.strip()[len("manual:") :].strip()
                    if comment.strip().startswith("manual:")
                    else ""
                )
                if code.endswith("python3 -m pytest"):
                    why = why or "the test suite itself"
                found.append((doc, position, code, why))
                position += 1
    return found


COMMANDS = _commands()


def _env(home: Path | None = None) -> dict[str, str]:
    """A reader's environment: no GOGGLES_* knob set, W&B offline; ``home`` as ``$HOME`` (the
    file's folder: what a command writes under ``~`` stays there)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")},
        "PYTHONPATH": os.pathsep.join(sys.path),
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
    }
    if home is not None:
        env["HOME"] = str(home)
    return env


def _split(command: str, cwd: Path) -> tuple[list[str], dict[str, str]]:
    """argv and environment of a command line: leading ``NAME=value`` words set variables (as
    the shell does), ``~/`` is the file's folder."""
    argv = [
        cwd.as_posix() + word[1:] if word.startswith("~/") else word
        for word in shlex.split(command)
    ]
    env = _env(cwd)
    while argv and _ASSIGN.match(argv[0]):
        name, _, value = argv.pop(0).partition("=")
        env[name] = value
    return argv, env


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    """One fresh folder per documentation file: a fresh demo run in ``runs/`` (what a reader has
    after the README's first command), the repository's examples beside it."""
    import contextlib
    import io

    from experiment_telemetry.demo.experiment import run_demo

    made: dict[Path, Path] = {}
    for doc in {doc for doc, *_ in COMMANDS}:
        folder = tmp_path_factory.mktemp(doc.stem.replace(".", "_"))
        (folder / "examples").symlink_to(ROOT / "examples")
        saved = dict(os.environ)  # run_demo picks the in-process transport by setting it
        try:
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                run_demo(folder / "runs", seed=0, num_epochs=1, wandb=False)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        made[doc] = folder
    return made


def _expand(code: str, cwd: Path) -> str:
    code = _INSTALL.sub("", code)
    if _PLACEHOLDER.search(code) or _OTHER.search(code):
        runs = sorted((p for p in (cwd / "runs").iterdir() if p.is_dir()), key=os.path.getmtime)
        assert len(runs) >= 1 + bool(_OTHER.search(code)), f"too few runs made before {code!r}"
        code = _PLACEHOLDER.sub(f"runs/{runs[-1].name}", code)
        code = _OTHER.sub(f"runs/{runs[-2].name}" if len(runs) > 1 else "", code)
    return code


def _serve(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Start a server command, wait for the line with its URL, Ctrl-C it; (exit code, output)."""
    if "--port" in argv:
        argv[argv.index("--port") + 1] = "0"
    else:
        argv += ["--port", "0"]
    seen = []
    with started(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "http://" in line or proc.poll() is not None:
                break
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    return code, "".join(seen)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("doc", "position", "code", "why"),
    COMMANDS,
    ids=[f"{doc.name}: {code}" for doc, _, code, _ in COMMANDS],
)
def test_documented_command_runs(
    workspaces: dict[Path, Path], doc: Path, position: int, code: str, why: str
) -> None:
    """The command exits 0 in the file's fresh folder (after the file's commands before it)."""
    if why:
        pytest.skip(f"manual: {why}")
    if (
        doc.name == "monty.md"
        and importlib.util.find_spec("tbp") is None
        and not os.environ.get("CI")
    ):
        pytest.skip("Monty is not installed: docs/monty.md's first command installs it (CI has it)")
    cwd = workspaces[doc]
    command = _expand(code, cwd)
    argv, env = _split(command, cwd)
    if argv[0] == "telemetry" and shutil.which("telemetry") is None:
        argv = [sys.executable, "-m", "experiment_telemetry", *argv[1:]]
    if command.startswith(_SERVERS):
        code_, output = _serve(argv, cwd, env)

        assert "http://" in output and 0 == code_, output
        return
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)

    assert 0 == done.returncode, f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
