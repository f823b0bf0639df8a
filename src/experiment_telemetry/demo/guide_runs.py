"""Synthetic training runs in the logging guide's shapes, healthy or broken, to try watches on.

Runtime side (standard library only): ``make_run(seed, algorithm, failure)`` returns the
``(source, step, values)`` points an RL driver following the metrics-logging guide would log:
the diagnostic bundle of the algorithm's metric table every ``diag_every`` environment steps
(source ``learner``), ``avg_reward`` and ``episodes`` at the driver cadence and ``eval_return``
every so often (source ``driver``). Healthy runs have staircase returns with noise, plateaus and
mild dips, decaying noisy losses and a saturating ``mean_q``; a failure bends them from a random
onset with a random strength, the way the guide's "What to watch" describes. Kept in the package
(not only in ``benchmarks/``) so a user can check their own ``Watch`` configs against the same
runs: ``benchmarks/watchers.py`` feeds them to the default watchers and reports detection, delay
and false alarms, and the tests replay one through a recorded run.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

__all__ = ["ALGORITHMS", "EXPECTED", "FAILURES", "GuideRun", "Point", "make_run"]

Point = tuple[str, int, dict[str, float]]
"""(source, environment step, values): one bundle."""

ALGORITHMS = ("SAC", "PPO", "DQN")
FAILURES = (
    "none",
    "value_explosion",
    "return_collapse",
    "loss_without_return",
    "counter_stall",
    "silence",
    "non_finite",
)
EXPECTED = {
    "value_explosion": "value_explosion",
    "return_collapse": "collapse",
    "loss_without_return": "divergence",
    "counter_stall": "counter_stall",
    "silence": "silence",
    "non_finite": "non_finite",
}
"""The check that should report each failure."""

_RETURNS = ("avg_reward", "eval_return")
_SCALE = {"SAC": (1000.0, 10000.0), "PPO": (100.0, 3000.0), "DQN": (20.0, 500.0)}


@dataclass
class GuideRun:
    """One synthetic run: its points and, for a failure, where it starts and where it shows."""

    algorithm: str
    failure: str
    seed: int
    points: list[Point]
    onset: int | None = None
    """Environment step the failure starts at (None: healthy)."""
    metrics: tuple[str, ...] = ()
    """The metrics an alert of the expected check may name."""
    strength: float = 0.0
    """How strong the failure is, in the failure's own unit (see ``make_run``)."""
    cadence: dict[str, int] = field(default_factory=dict)
    """Environment steps between two points of each metric."""


def _progress(rng: random.Random, stairs: int, warmup: float) -> list[tuple[float, float, float]]:
    """(centre, width, height) of each stair of a staircase return, heights summing to 1."""
    weights = [rng.uniform(0.3, 1.0) for _ in range(stairs)]
    total = sum(weights)
    # A healthy return starts to climb in the first fifth of the run; later stairs anywhere.
    centres = [rng.uniform(warmup + 0.03, 0.2)]
    centres += sorted(rng.uniform(centres[0], 0.85) for _ in range(stairs - 1))
    return [(c, rng.uniform(0.01, 0.06), w / total) for c, w in zip(centres, weights, strict=True)]


def _staircase(stairs: list[tuple[float, float, float]], x: float) -> float:
    return sum(h / (1.0 + math.exp(-(x - c) / w)) for c, w, h in stairs)


def _dips(rng: random.Random) -> list[tuple[float, float, float]]:
    """(centre, half-width, depth) of mild dips: a few % of the run, up to a quarter of the gain."""
    return [
        (rng.uniform(0.1, 0.95), rng.uniform(0.005, 0.03), rng.uniform(0.05, 0.25))
        for _ in range(rng.randint(0, 3))
    ]


def _dip(dips: list[tuple[float, float, float]], x: float) -> float:
    return max((d * max(0.0, 1.0 - abs(x - c) / w) for c, w, d in dips), default=0.0)


def make_run(seed: int, algorithm: str = "SAC", failure: str = "none") -> GuideRun:
    """One run of ``algorithm`` (``ALGORITHMS``) broken by ``failure`` (``FAILURES``).

    Strengths: value explosion, the growth of ``mean_q`` per diagnostic point (doubling within
    5 to 25 points); return collapse, the share of the gain lost (0.65 to 1); loss without return,
    the share of the loss that goes (0.5 to 0.95); counter stall, the share of the update rate lost
    (0.6 to 1); silence and non-finite, 1. PPO has no Q metric, so it has no value explosion.

    Raises:
        ValueError: an unknown algorithm or failure, or value explosion for PPO.
    """
    if algorithm not in ALGORITHMS or failure not in FAILURES:
        msg = f"algorithm must be one of {ALGORITHMS!r} and failure one of {FAILURES!r} (got {algorithm!r}, {failure!r})."
        raise ValueError(msg)
    if algorithm == "PPO" and failure == "value_explosion":
        msg = "PPO logs no Q value (the guide's table): it has no value_explosion run."
        raise ValueError(msg)
    rng = random.Random(f"{seed}/{algorithm}/{failure}")
    diag = 1000
    n = rng.randint(800, 1500)
    every = rng.choice((5000, 10000))
    eval_every = rng.choice((10000, 20000, 25000))
    run = GuideRun(algorithm, failure, seed, [])
    lo, hi = _SCALE[algorithm]
    final = rng.uniform(lo, hi)
    first = final * rng.uniform(-0.1, 0.1)
    warmup = rng.uniform(0.0, 0.1)
    stairs = _progress(rng, rng.randint(1, 4), warmup)
    dips = _dips(rng)
    onset_x = 2.0  # past the end: healthy
    strength = 0.0
    if failure == "return_collapse":
        # After progress: the onset comes once half of the gain is there.
        half = next(x / 100 for x in range(100) if _staircase(stairs, x / 100) >= 0.5)
        onset_x = rng.uniform(max(half + 0.05, 0.35), 0.85)
        strength = rng.uniform(0.65, 1.0)
    elif failure == "loss_without_return":
        onset_x = rng.uniform(0.0, 0.3)  # learning starts; the return never follows
        strength = rng.uniform(0.5, 0.95)
    elif failure != "none":
        onset_x = rng.uniform(0.3, 0.8)
        strength = {
            "value_explosion": 2.0 ** (1.0 / rng.uniform(5.0, 25.0)),
            "counter_stall": rng.uniform(0.6, 1.0),
        }.get(failure, 1.0)
    onset = int(onset_x * n) * diag if onset_x <= 1.0 else None
    run.onset, run.strength = onset, strength
    # Learner-side shapes.
    q_final = rng.uniform(20.0, 400.0) * (1 if algorithm == "SAC" else 0.1)
    tau_q = rng.uniform(0.05, 0.3)
    q_own = rng.uniform(0.2, 1.0)
    loss0, loss_floor = rng.uniform(0.5, 20.0), rng.uniform(0.05, 0.5)
    tau_loss = rng.uniform(0.05, 0.3)
    loss_sd = rng.uniform(0.05, 0.3)  # multiplicative
    q_sd = rng.uniform(0.005, 0.04)
    ratio = rng.choice((0.25, 0.5, 1.0, 2.0)) if algorithm != "DQN" else 0.25
    ret_sd = final * rng.uniform(0.02, 0.08)
    eval_sd = final * rng.uniform(0.05, 0.15)
    silent = rng.choice(_bundle_names(algorithm)[:-1]) if failure == "silence" else ""
    bad = rng.choice(_bundle_names(algorithm)) if failure == "non_finite" else ""
    lasting = rng.random() < 0.5
    fall = rng.randint(1, 20)  # diagnostic points a collapse takes
    exploding = 1.0
    train_steps = 0.0
    episodes = 0
    points = run.points
    for i in range(1, n + 1):
        step = i * diag
        x = i / n
        broken = onset is not None and step > onset
        lx = max(0.0, x - onset_x) if failure == "loss_without_return" else x  # learning starts
        p = _staircase(stairs, x) * (1.0 - _dip(dips, x))
        if failure == "loss_without_return":
            p = 0.0
        elif failure == "return_collapse" and broken:
            p *= 1.0 - strength * min(1.0, (step - (onset or 0)) / (fall * diag))
        ret = first + (final - first) * p
        if failure == "value_explosion" and broken:
            exploding *= strength
        # Q saturates as the critic fits, and follows the return's stairs and dips.
        q = q_final * (q_own * (1.0 - math.exp(-lx / tau_q)) + (1.0 - q_own) * p) * exploding
        q *= 1.0 + rng.gauss(0.0, q_sd)
        if failure == "loss_without_return":  # flat until learning starts, then down by strength
            start = loss_floor + loss0
            decay = start * (1.0 - strength * (1.0 - math.exp(-max(0.0, x - onset_x) / tau_loss)))
        else:
            decay = loss_floor + loss0 * math.exp(-x / tau_loss)
        loss = decay * math.exp(rng.gauss(0.0, loss_sd)) * (exploding**2)
        rate = ratio * ((1.0 - strength) if failure == "counter_stall" and broken else 1.0)
        train_steps += diag * rate * rng.uniform(0.97, 1.03)
        values = _bundle(rng, algorithm, lx, q, loss, ret / final, train_steps)
        if broken and silent:
            del values[silent]
        if broken and bad and (lasting or step == (onset or 0) + diag):
            values[bad] = rng.choice((math.nan, math.inf, -math.inf))
        points.append(("learner", step, values))
        if step % every == 0:
            episodes += rng.randint(5, 20)
            avg = ret + rng.gauss(0.0, ret_sd)
            points.append(("driver", step, {"avg_reward": avg, "episodes": float(episodes)}))
        if step % eval_every == 0:
            points.append(("driver", step, {"eval_return": ret + rng.gauss(0.0, eval_sd)}))
    run.cadence = {name: diag for name in _bundle_names(algorithm)}
    run.cadence.update(avg_reward=every, episodes=every, eval_return=eval_every)
    run.metrics = {
        "none": (),
        "value_explosion": ("mean_q", "mean_next_q"),
        "return_collapse": _RETURNS,
        "loss_without_return": _RETURNS,
        "counter_stall": ("train_steps",),
        "silence": (silent,),
        "non_finite": (bad,),
    }[failure]
    return run


def _bundle_names(algorithm: str) -> tuple[str, ...]:
    """The guide's metric table for ``algorithm``, ``train_steps`` last."""
    return {
        "SAC": ("policy_loss", "critic_loss", "alpha", "mean_q", "mean_next_q", "reward_mean"),
        "PPO": ("policy_loss", "critic_loss", "approx_kl", "clip_fraction", "entropy"),
        "DQN": ("loss", "mean_q", "explore_rate", "td_error_abs_mean"),
    }[algorithm] + ("train_steps",)


def _bundle(
    rng: random.Random,
    algorithm: str,
    x: float,
    q: float,
    loss: float,
    progress: float,
    train_steps: float,
) -> dict[str, float]:
    """One diagnostic bundle: the algorithm's metrics ``x`` (a run fraction) into learning."""
    g = rng.gauss
    if algorithm == "SAC":
        alpha = 0.02 + 0.5 * math.exp(-x / 0.1) * math.exp(g(0.0, 0.05))
        return {
            "policy_loss": -q + alpha * g(2.0, 0.5),
            "critic_loss": loss,
            "alpha": alpha,
            "mean_q": q,
            "mean_next_q": q * (1.0 + g(0.0, 0.01)),
            "reward_mean": 0.1 + progress * 2.0 + g(0.0, 0.3),
            "train_steps": math.floor(train_steps),
        }
    if algorithm == "PPO":
        return {
            "policy_loss": g(-0.01, 0.01),
            "critic_loss": loss,
            "approx_kl": abs(g(0.01, 0.004)),
            "clip_fraction": min(1.0, abs(g(0.15, 0.04))),
            "entropy": 1.5 - x + g(0.0, 0.05),
            "train_steps": math.floor(train_steps),
        }
    return {
        "loss": loss,
        "mean_q": q,
        "explore_rate": max(0.05, 1.0 - x / 0.1),
        "td_error_abs_mean": math.sqrt(loss) * (1.0 + g(0.0, 0.1)),
        "train_steps": math.floor(train_steps),
    }
