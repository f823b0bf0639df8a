"""Whether real Monty can run here: the Monty tests skip without it, except in CI (``CI=true``),
where ``.ci/run`` installs it and a missing Monty fails them."""

from __future__ import annotations

import os

import pytest

__all__ = ["EXPERIMENTS", "VOTING", "VOTING_OVERRIDES", "monty_missing", "need_monty"]

EXPERIMENTS = ("test/evidence_lm/evidence_mujoco", "test/graph_learning/feature_pred_mujoco")
VOTING = "test/evidence_lm/five_lm_mujoco"
"""Five evidence LMs that vote; its predefined policy file is not in Monty's wheel, so it runs
with the informed random walk of the two test experiments (``VOTING_OVERRIDES``)."""
VOTING_OVERRIDES = ("monty/motor_system_config=informed_random_walk_5",)


def monty_missing() -> str | None:
    """Why Monty cannot run here, or None."""
    from experiment_telemetry.monty import MontyUnavailableError, require_monty

    try:
        require_monty()
        import hydra  # noqa: F401
        import mujoco  # noqa: F401
    except (MontyUnavailableError, ImportError) as exc:
        return str(exc)
    return None


def need_monty() -> None:
    """Skip (or, in CI, fail) when Monty cannot run here."""
    reason = monty_missing()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI runs real Monty, and it is missing: {reason} (.ci/run installs it)")
    pytest.skip(f"Monty is not installed here ({reason}); CI installs it")
