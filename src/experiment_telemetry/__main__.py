"""``python -m experiment_telemetry`` is the ``telemetry`` command."""

from __future__ import annotations

import sys

from experiment_telemetry.cli import main

sys.exit(main())
