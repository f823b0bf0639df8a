"""``StatsHandler``: a Monty ``MontyHandler`` that turns each reported episode into this project's.

Monty's ``BasicGraphMatchingLogger`` calls ``report_episode(data, output_dir, episode, mode)``
on every handler of its logging config after each episode, with the statistics it computed
from its learning modules. This handler sits beside Monty's own (its CSV and W&B handlers stay
as they are: ``logging=split_telemetry`` keeps ``BasicCSVStatsHandler``) and:

1. builds the episode's ``EpisodeContext`` from Monty's target and timing data (the
   experiment side's knowledge: target, pose, scale, seed, epoch);
2. records Monty's per-LM statistics as a ``MontyEpisodeReported`` event;
3. has the run score the episode (``Session.end_episode``): with the step hook, our
   ``RecognitionAggregator`` from the hook's events, Monty's numbers beside them; without it,
   Monty's numbers are the run's statistics.

Duck-typed (``report_episode``, ``close``, ``log_level``) rather than a subclass of Monty's
abstract class, so that defining it imports nothing of Monty.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

import nonfinite_json
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.monty import _session
from experiment_telemetry.monty._hydra import hydra_settings
from experiment_telemetry.monty.events import MontyEpisodeReported

__all__ = ["StatsHandler", "plain_data"]

_logger = logging.getLogger(__name__)


def plain_data(value: Any) -> Any:
    """Monty's statistics as plain JSON data: arrays and numpy scalars as lists and numbers,
    sets as sorted lists, rotations as scalar-first quaternions, anything else as text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain_data(v) for v in value), key=str)
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", None) == 0:
        return plain_data(item())
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return plain_data(tolist())
    as_quat = getattr(value, "as_quat", None)
    if callable(as_quat):
        return plain_data(as_quat())
    return str(value)


def _float(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if math.isfinite(number) else default


class StatsHandler:
    """Monty's statistics of each episode into this project's run (see the module docstring).

    Args (from Monty's logging config, beside ``_target_``): ``root`` (where the run's folder
    goes; the shipped config: Monty's output folder), ``project``, ``slug``, ``wandb`` (also
    log to W&B through goggles_io), ``console`` (print one line per episode).
    """

    def __init__(
        self,
        *,
        root: str | None = None,
        project: str | None = None,
        slug: str | None = None,
        wandb: bool | None = None,
        console: bool | None = None,
    ) -> None:
        self._settings = {"root": root, "project": project, "slug": slug, "wandb": wandb,
                          "console": console}  # fmt: skip
        _session.configure(**self._settings, stats_handler=True)
        hydra_settings()  # read now, while Hydra builds the experiment: not in Monty's run
        self._held: _session.Session | None = None
        self.reported = 0

    def __reduce__(self) -> tuple[Any, ...]:
        """Monty saves its config (this handler included) with ``torch.save`` after each epoch:
        a copy is a handler with the same settings, not this run."""
        return (_rebuild, (self._settings,))

    @classmethod
    def log_level(cls) -> str:
        """Monty's level for handlers that read the per-episode ``BASIC`` statistics."""
        return "BASIC"

    def report_episode(
        self,
        data: Mapping[str, Any],
        output_dir: Any,
        episode: int,
        mode: Any = "train",
        **kwargs: Any,
    ) -> None:
        """Score Monty's episode ``episode`` of ``mode`` in this run."""
        mode_name = str(mode)
        basic = data["BASIC"]
        stats = basic.get(f"{mode_name}_stats", {}).get(episode)
        if stats is None:
            _logger.warning("Monty reported %s episode %s without statistics", mode_name, episode)
            return
        target = basic.get(f"{mode_name}_targets", {}).get(episode) or {}
        timing = basic.get(f"{mode_name}_timing", {}).get(episode) or {}
        lms = {k: v for k, v in stats.items() if isinstance(k, str) and k.startswith("LM_")}
        held = self._held
        if held is None or held.closed:
            self._held = held = _session.acquire()
        context = self._context(held, mode_name, lms, target, timing)
        report = MontyEpisodeReported(
            mode=mode_name,
            monty_episode=int(episode),
            lm_stats=nonfinite_json.dumps(plain_data(lms)),
        )
        held.end_episode(report, context)
        self.reported += 1

    def _context(
        self,
        session: _session.Session,
        mode: str,
        lms: Mapping[str, Any],
        target: Mapping[str, Any],
        timing: Mapping[str, Any],
    ) -> EpisodeContext:
        first: Mapping[str, Any] = next(iter(lms.values()), {})
        label = target.get("primary_target_object") or first.get("primary_target_object")
        seed = timing.get("episode_seed", first.get("episode_seed"))
        epoch = timing.get(f"{mode}_epochs", 0)
        return EpisodeContext(
            timestamp=session.episode_start or time.time(),
            mode=mode,
            epoch=int(epoch) if isinstance(epoch, (int, float)) else 0,
            episode=session.episode,
            target=str(label or "no_label"),
            target_rotation=plain_data(target.get("primary_target_rotation_quat", (1, 0, 0, 0))),
            seed=int(seed) if seed is not None else None,
            target_position=plain_data(target.get("primary_target_position", (0, 0, 0))),
            target_euler=plain_data(target.get("primary_target_rotation_euler")),
            target_scale=_float(target.get("primary_target_scale", 1.0), 1.0),
        )

    def close(self) -> None:
        """Let go of the run (the last piece to let go closes it)."""
        held, self._held = self._held, None
        if held is not None and not held.closed:
            _session.release(held)


def _rebuild(settings: dict[str, Any]) -> StatsHandler:
    return StatsHandler(**settings)
