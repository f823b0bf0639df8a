"""``DataLogger``: robo-goggles' protocol of the data calls, for type hints and ``isinstance``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["DataLogger"]


@runtime_checkable
class DataLogger(Protocol):
    """What logs data (a :class:`~goggles_io.GogglesLogger` is one); methods as robo-goggles'."""

    def scalar(self, name: str, value: float, step: int | None = None, **kw: Any) -> None: ...

    def push(self, metrics: Mapping[str, Any], step: int | None = None, **kw: Any) -> None: ...

    def dictionary(
        self, name: str, data: Mapping[str, Any], step: int | None = None, **kw: Any
    ) -> None: ...

    def image(self, image: Any, step: int | None = None, **kw: Any) -> None: ...

    def video(self, video: Any, step: int | None = None, **kw: Any) -> None: ...

    def histogram(self, histogram: Any, step: int | None = None, **kw: Any) -> None: ...

    def vector_field(self, vector_field: Any, step: int | None = None, **kw: Any) -> None: ...

    def trajectories(self, trajectories: Any, step: int | None = None, **kw: Any) -> None: ...

    def artifact(self, data: Any, step: int | None = None, **kw: Any) -> None: ...
