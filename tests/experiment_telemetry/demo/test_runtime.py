"""The simulated runtime is runtime-side code: it imports nothing from the experiment side."""

from __future__ import annotations

import json
import subprocess
import sys


class TestRuntimeIsolation:
    def test_importing_runtime_pulls_in_no_experiment_or_io_module(self) -> None:
        """A fresh interpreter importing demo.runtime loads no aggregator, transform or goggles_io."""
        code = (
            "import json, sys; import experiment_telemetry.demo.runtime; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('goggles_io', "
            "'experiment_telemetry.aggregators', 'experiment_telemetry.transforms', 'experiment_telemetry.harness', 'wandb')))))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )

        assert [] == json.loads(out.stdout)
