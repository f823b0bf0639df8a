"""robo-goggles' ``goggles.validation``: two numeric helpers its users call."""

from __future__ import annotations

import math
import numbers

__all__ = ["is_int", "round_up_to_multiple"]


def is_int(val: object) -> bool:
    """Whether ``val`` is a whole real number: ``1``, ``1.0``, ``True``, ``2**70``; not ``"1"``."""
    if isinstance(val, numbers.Integral):
        return True
    if isinstance(val, numbers.Real):
        return math.isfinite(val) and float(val).is_integer()
    return False


def round_up_to_multiple(number: float, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is ``>= number`` (``5, 4 -> 8``; ``-3, 4 -> 0``).

    Raises:
        ZeroDivisionError: ``multiple`` is 0.
    """
    return math.ceil(number / multiple) * int(multiple)
