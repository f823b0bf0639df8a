"""README.md and CI agree: CI runs exactly the test command the README gives."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block is not None, "README.md must open with a bash block of two commands"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


class TestReadme:
    def test_readme_opens_with_two_commands(self) -> None:
        """The README's first code block holds exactly two commands: demo and tests."""
        commands = _readme_commands()

        assert 2 == len(commands)

    def test_ci_runs_the_readme_test_command(self) -> None:
        """.ci/run contains the README's test command verbatim."""
        test_command = _readme_commands()[1]

        assert test_command in (ROOT / ".ci" / "run").read_text()
