"""examples/runtime_only.py runs with core deps only and imports no experiment-side code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "runtime_only.py"


class TestRuntimeOnlyExample:
    def test_prints_events_without_experiment_imports(self) -> None:
        """The demo exits 0, prints the recognised object, and reports no experiment imports."""
        result = subprocess.run(
            [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, check=False
        )

        assert (0, True, True) == (
            result.returncode,
            "RECOGNISED 'mug'" in result.stdout,
            "experiment-side packages imported: none" in result.stdout,
        )
