"""``DataLogger``: robo-goggles' protocol of the data calls, for type hints and ``isinstance``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["DataLogger"]


@runtime_checkable
class DataLogger(Protocol):
    """What logs data (a :class:`~goggles_io.GogglesLogger` is one); signatures as robo-goggles'."""

    def scalar(
        self,
        name: str,
        value: float,
        step: int | None = None,
        *,
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def push(
        self,
        metrics: Mapping[str, Any],
        step: int | None = None,
        *,
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def dictionary(
        self,
        name: str,
        data: Mapping[str, Any],
        step: int | None = None,
        *,
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def image(
        self,
        image: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        format: str = "png",
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def video(
        self,
        video: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        fps: float = 30,
        format: str = "gif",
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def histogram(
        self,
        histogram: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        time: float | None = None,
        static: bool = False,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def vector_field(
        self,
        vector_field: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def trajectories(
        self,
        trajectories: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...

    def artifact(
        self,
        data: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        format: str = "bin",
        time: float | None = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None: ...
