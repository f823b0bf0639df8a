"""From a device-resident history to a goggles_io logger, with one device-to-host copy."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from goggles_io.exceptions import ConfigurationError
from goggles_io.history.types import History
from goggles_io.history.utils import peek_last

__all__ = ["SUMMARIES", "MetricsLogger", "log_history"]

SUMMARIES: dict[str, Callable[[jax.Array], jax.Array]] = {
    "max": jnp.max,
    "mean": jnp.mean,
    "min": jnp.min,
    "std": jnp.std,
    "sum": jnp.sum,
}
"""Summary names ``log_history`` accepts, each a reduction over the batch and the field's shape."""


class MetricsLogger(Protocol):
    """The part of ``goggles_io.GogglesLogger`` that ``log_history`` uses."""

    def scalar(self, name: str, value: float, step: int | None = None) -> Any: ...

    def push(self, metrics: Any, step: int | None = None) -> Any: ...

    def histogram(self, values: Any, name: str, step: int | None = None) -> Any: ...


def log_history(
    logger: MetricsLogger,
    history: History,
    field: str,
    step: int | None,
    summary: str | Sequence[str] | None = None,
    *,
    name: str | None = None,
) -> None:
    """Log the newest entry of ``field`` (B rows), or summaries of it, through ``logger``.

    Summaries are reduced on device and everything sent comes back in a single
    ``jax.device_get``; the jitted loop is not held up beyond that copy.

    * ``summary=None``: one value in all -> ``scalar(name)``; more -> ``histogram(name)``.
    * ``summary="mean"`` (or ``min``, ``max``, ``std``, ``sum``) -> ``scalar(f"{name}/mean")``.
    * a list of summaries -> one ``push({f"{name}/mean": ..., ...})``.

    Args:
        name: Metric name, default ``field``.

    Raises:
        ConfigurationError: unknown summary; the message lists the known ones.
    """
    name = field if name is None else name
    names = [summary] if isinstance(summary, str) else summary
    if names is not None and not names:
        msg = f"summary must be None, one of {sorted(SUMMARIES)} or a non-empty list of them (got {summary!r})."
        raise ConfigurationError(msg, key="summary", value=summary)
    for s in names or ():
        if s not in SUMMARIES:
            msg = f"summary must be None, one of {sorted(SUMMARIES)} or a list of them (got {s!r})."
            raise ConfigurationError(msg, key="summary", value=s)
    sent = jax.device_get(_gather(history, field, None if names is None else tuple(names)))
    if names is None:
        values = np.asarray(sent)
        if values.size == 1:
            logger.scalar(name, values.reshape(()).item(), step=step)
        else:
            logger.histogram(values, name=name, step=step)
        return
    metrics = {f"{name}/{s}": np.asarray(v).item() for s, v in zip(names, sent, strict=True)}
    if isinstance(summary, str):
        logger.scalar(f"{name}/{summary}", metrics[f"{name}/{summary}"], step=step)
    else:
        logger.push(metrics, step=step)


@functools.partial(jax.jit, static_argnums=(1, 2))
def _gather(history: History, field: str, names: tuple[str, ...] | None) -> Any:
    """Newest entry of ``field`` (or its summaries) in one dispatch: no host transfer on the way."""
    latest = peek_last(history, 1, field)[field][:, 0]
    if names is None:
        return latest
    return [SUMMARIES[s](latest) for s in names]
