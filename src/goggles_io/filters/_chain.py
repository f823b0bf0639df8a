"""Composition: a chain feeds each filter's output to the next, and config-driven construction."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters._base import Filter, State
from goggles_io.filters._outliers import RangeFilter, ZScoreFilter
from goggles_io.filters._pointwise import Quantize, Scale
from goggles_io.filters._smoothing import ExponentialMovingAverage, MedianFilter, MovingAverage

__all__ = ["FILTER_TYPES", "Chain", "make_filter"]


class Chain(Filter):
    """Apply ``filters`` in order; the state is the tuple of the members' states.

    Args:
        filters: The filters to compose (at least one); each keeps its own state.
    """

    type_name = "chain"

    def __init__(self, filters: Sequence[Filter]) -> None:
        super().__init__()
        filters = tuple(filters)
        if not filters:
            msg = f"filters must hold at least one filter (got {filters!r})."
            raise ConfigurationError(msg, key="filters", value=filters)
        for f in filters:
            if not isinstance(f, Filter):
                msg = f"filters must hold Filter instances (got {f!r}); use make_filter(config)."
                raise ConfigurationError(msg, key="filters", value=f)
        self.filters = filters

    def to_config(self) -> dict[str, Any]:
        return {"type": "chain", "filters": [f.to_config() for f in self.filters]}

    def _params(self) -> dict[str, Any]:
        return {"filters": self.filters}

    def init_state(self, example_or_shape: Any = (), dtype: Any = None) -> State:
        return tuple(f.init_state(example_or_shape, dtype) for f in self.filters)

    def apply(self, state: State, x: Any) -> tuple[Any, State]:
        new = []
        for f, s in zip(self.filters, state, strict=True):
            x, s = f.apply(s, x)
            new.append(s)
        return x, tuple(new)

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[Any, State]:
        return self.apply(state, x)


FILTER_TYPES: Mapping[str, type[Filter]] = {
    "moving_average": MovingAverage,
    "exponential": ExponentialMovingAverage,
    "ema": ExponentialMovingAverage,
    "median": MedianFilter,
    "range": RangeFilter,
    "zscore": ZScoreFilter,
    "stddev": ZScoreFilter,
    "scale": Scale,
    "quantize": Quantize,
    "chain": Chain,
}
"""Config ``type`` names accepted by :func:`make_filter` (``ema`` and ``stddev`` are aliases)."""


def make_filter(config: Mapping[str, Any] | Sequence[Any] | Filter) -> Filter:
    """Build a filter from a config mapping, or a ``Chain`` from a list of configs.

    ``{"type": "moving_average", "window": 5}`` gives ``MovingAverage(window=5)``; the other keys
    are the class's keyword arguments. A list (or ``{"type": "chain", "filters": [...]}``)
    composes in order. Filter instances pass through, so configs and objects can be mixed.

    Raises:
        ConfigurationError: unknown ``type``, unknown or bad parameter; the message names it.
    """
    if isinstance(config, Filter):
        return config
    if isinstance(config, Sequence) and not isinstance(config, (str, bytes)):
        return Chain([make_filter(item) for item in config])
    if not isinstance(config, Mapping):
        msg = f"filter config must be a mapping or a list of mappings (got {config!r})."
        raise ConfigurationError(msg, key="config", value=config)
    params = dict(config)
    kind = params.pop("type", None)
    cls = FILTER_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        msg = f"unknown filter type {kind!r} in {dict(config)!r}; known: {sorted(FILTER_TYPES)}."
        raise ConfigurationError(msg, key="type", value=kind)
    known = set(cls.__init__.__code__.co_varnames[1 : cls.__init__.__code__.co_argcount])
    for key in params:
        if key not in known:
            msg = f"unknown parameter {key!r} for filter type {kind!r}; known: {sorted(known)}."
            raise ConfigurationError(msg, key=key, value=params[key])
    if cls is Chain:
        return Chain([make_filter(item) for item in params.get("filters", ())])
    return cls(**params)
