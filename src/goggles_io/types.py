"""robo-goggles' ``goggles.types``: the event record and the names of what a logger takes.

``Kind`` is goggles_io's ``str`` enum (``Kind.IMAGE == "image"``), not robo-goggles' ``Literal``
of the same strings, so handlers can compare with either. The array aliases are documentation:
every one is a numpy array, shaped as its logger method says.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

import numpy as np

from goggles_io._event.records import Event, Kind

__all__ = ["Event", "Image", "Kind", "Metrics", "Trajectories", "Vector", "VectorField", "Video"]

Metrics: TypeAlias = Mapping[str, float | int | np.ndarray]
Image: TypeAlias = np.ndarray  # (H, W) or (H, W, C), C in 1, 3, 4
Video: TypeAlias = np.ndarray  # (T, H, W[, C]) or (T, C, H, W)
Vector: TypeAlias = np.ndarray  # 1-D
VectorField: TypeAlias = np.ndarray  # (..., 2) or (..., 3)
Trajectories: TypeAlias = np.ndarray  # (N, L, dim) or (L, dim), dim 2 or 3
