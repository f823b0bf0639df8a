"""Composition and config-driven construction: ``ConcatFilter``, ``FilterConfig``, ``create_concat_filter``.

A filter config is a :class:`FilterConfig` or the equivalent mapping
``{"type": "AverageFilter", "parameters": {"window_size": 3}}``; ``type`` is the class name. Wherever
filters are accepted (``ConcatFilter(filters=...)``, ``fallback_filter=``), configs are too.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

import attrs

from goggles_io.exceptions import ConfigurationError
from goggles_io.filters._base import FILTER_CLASSES, Filter, State, float_dtype, get_namespace

__all__ = ["ConcatFilter", "FilterConfig", "create_concat_filter"]


def _to_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        msg = f"parameters must be a mapping (got {value!r})."
        raise ConfigurationError(msg, key="parameters", value=value)
    return dict(value)


def _check_type(_: Any, __: Any, value: Any) -> None:
    if not isinstance(value, str):
        msg = f"type must be a filter class name (got {value!r})."
        raise ConfigurationError(msg, key="type", value=value)


@attrs.frozen
class FilterConfig:
    """One filter described by data: its class name and keyword arguments.

    Args:
        type: The filter class name, e.g. ``"MinMaxFilter"``.
        parameters: The class's keyword arguments.
    """

    type: str = attrs.field(validator=_check_type)
    parameters: dict[str, Any] = attrs.field(factory=dict, converter=_to_dict)

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> FilterConfig:
        """Build from ``{"type": ..., "parameters": {...}}`` (robo-goggles' form).

        Raises:
            ConfigurationError: ``cfg`` is not a mapping, has no ``type``, or its ``parameters``
                is not a mapping.
        """
        if not isinstance(cfg, Mapping) or "type" not in cfg:
            msg = f"a filter config needs a 'type' (got {cfg!r})."
            raise ConfigurationError(msg, key="type", value=cfg)
        return cls(type=cfg["type"], parameters=cfg.get("parameters", {}))

    def to_dict(self) -> dict[str, Any]:
        """``{"type": ..., "parameters": {...}}``, the form :meth:`from_config` reads."""
        return {"type": self.type, "parameters": dict(self.parameters)}


FilterLike = Filter | FilterConfig | Mapping[str, Any]
"""What every filter-accepting argument takes: a filter, a FilterConfig or its mapping form."""


def _filter_types() -> dict[str, type[Filter]]:
    return dict(FILTER_CLASSES)


def build_filter(item: FilterLike, available: Mapping[str, type[Filter]] | None = None) -> Filter:
    """Return ``item`` if it is a filter, else build the filter its config describes.

    ``available`` maps type names to classes (robo-goggles' ``available_filters``); default:
    every filter class defined.

    Raises:
        ConfigurationError: unknown type, unknown or missing parameter, or a bad value (the
            filter's own check); the message names it.
    """
    if isinstance(item, Filter):
        return item
    if isinstance(item, Mapping):
        extra = set(item) - {"type", "parameters"}
        if extra:
            msg = f"unknown filter config keys {sorted(extra)} in {dict(item)!r}; use type and parameters."
            raise ConfigurationError(msg, key=sorted(extra)[0], value=dict(item))
        item = FilterConfig(type=item.get("type"), parameters=item.get("parameters", {}))  # type: ignore[arg-type]
    if not isinstance(item, FilterConfig):
        msg = f"a filter must be a Filter, a FilterConfig or a mapping (got {item!r})."
        raise ConfigurationError(msg, key="filter", value=item)
    types = _filter_types() if available is None else dict(available)
    cls = types.get(item.type)
    if cls is None:
        msg = f"unknown filter type {item.type!r}; known: {sorted(types)}."
        raise ConfigurationError(msg, key="type", value=item.type)
    try:
        inspect.signature(cls).bind(**item.parameters)
    except TypeError as exc:
        msg = f"bad parameters for {item.type}: {exc} (got {item.parameters!r})."
        raise ConfigurationError(msg, key="parameters", value=item.parameters) from None
    return cls(**item.parameters)


class ConcatFilter(Filter):
    """Apply ``filters`` in order, each to the previous one's output; no filters is the identity.

    The state is the tuple of the members' states, so one member object may appear in several
    chains: it is only ever used through the pure front.

    Args:
        filters: Filters, FilterConfigs or config mappings, in order.
        prefix: Put before :attr:`name` (robo-goggles' debugging label).
    """

    def __init__(self, filters: Iterable[FilterLike] = (), prefix: str = "") -> None:
        super().__init__(prefix)
        if isinstance(filters, (Filter, FilterConfig, Mapping, str)):
            msg = f"filters must be a list of filters or configs (got {filters!r})."
            raise ConfigurationError(msg, key="filters", value=filters)
        self.filters: list[Filter] = [build_filter(f) for f in filters]

    def _params(self) -> dict[str, Any]:
        return {"filters": self.filters}

    def init_state(self, data: Any) -> State:
        return tuple(f.init_state(data) for f in self.filters)

    def apply(self, state: State, data: Any) -> tuple[State, Any]:
        if not self.filters:
            xp = get_namespace(data)
            arr = xp.asarray(data)
            return state, arr.astype(float_dtype(xp, arr.dtype))
        new = []
        for f, s in zip(self.filters, state, strict=True):
            s, data = f.apply(s, data)
            new.append(s)
        return tuple(new), data

    def _apply(self, xp: ModuleType, state: State, x: Any) -> tuple[State, Any]:
        return self.apply(state, x)


def create_concat_filter(
    filter_configs: Iterable[FilterLike],
    *,
    available_filters: Mapping[str, type[Filter]] | None = None,
) -> ConcatFilter:
    """Build a :class:`ConcatFilter` from a list of configs (filters pass through).

    ``available_filters`` maps each config's ``type`` to a class (default: every filter class,
    robo-goggles' ``AVAILABLE_FILTERS`` included).

    Raises:
        ConfigurationError: (a ValueError) for an unknown type or a bad parameter.
    """
    if isinstance(filter_configs, (Filter, FilterConfig, Mapping, str)):
        msg = f"filter_configs must be a list of filters or configs (got {filter_configs!r})."
        raise ConfigurationError(msg, key="filter_configs", value=filter_configs)
    return ConcatFilter([build_filter(item, available_filters) for item in filter_configs])
