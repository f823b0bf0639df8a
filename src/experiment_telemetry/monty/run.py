"""``python -m experiment_telemetry.monty.run experiment=...``: Monty's docs' ``run.py``, as a module.

Monty 0.55 ships its Hydra ``main`` without a ``__main__`` guard or a console script; its docs
have users write a four-line ``run.py``. This is that file, so a run needs no file of one's
own: it sets Monty's environment defaults (``MONTY_LOGS``...), then runs Monty's ``main``
with the command line's Hydra overrides (add ``+telemetry=split_telemetry
logging=split_telemetry +step_hook=split_telemetry`` for this project's adapter).
"""

from __future__ import annotations

import sys

from experiment_telemetry.monty._version import MontyUnavailableError, require_monty

__all__ = ["main"]


def main() -> None:
    """Run Monty's Hydra ``main`` on ``sys.argv`` (exit 2 with one line when Monty is missing)."""
    try:
        require_monty()
    except MontyUnavailableError as exc:
        print(f"experiment_telemetry.monty.run: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    from tbp.monty.frameworks.run_env import setup_env

    setup_env()
    from tbp.monty.frameworks.run import main as monty_main

    monty_main()


if __name__ == "__main__":
    main()
