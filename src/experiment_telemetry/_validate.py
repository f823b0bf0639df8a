"""Argument checks shared across the package: one wording for every "must be an int" error."""

from __future__ import annotations

from experiment_telemetry.exceptions import ExperimentValueError

__all__ = ["check_int"]


def check_int(name: str, value: object, minimum: int, *, unit: str = "", hint: str = "") -> int:
    """Return ``value`` if it is an int (a bool is not) of at least ``minimum``.

    Raises:
        ExperimentValueError: ``"<name> must be an int >= <minimum><unit> (got <value!r>)<hint>."``,
            carrying ``value``.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        msg = f"{name} must be an int >= {minimum}{unit} (got {value!r}){hint}."
        raise ExperimentValueError(msg, value)
    return value
