"""What ``WandBHandler`` hands W&B for each kind of event, as robo-goggles 0.3.6 sends it.

images as ``wandb.Image``; videos as ``wandb.Video`` of a GIF or MP4 file written here (wandb
would need moviepy for arrays); histograms as ``wandb.Histogram`` or, with ``static=True``, a
``wandb.plot.histogram`` custom chart; vector fields as a ``wandb.Image`` of their picture;
trajectories as an interactive ``wandb.Plotly`` figure (plotly, from the ``[wandb]`` extra);
artifacts as ``wandb.Artifact`` uploads. Each builder takes the event and returns the value.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from goggles_io._event.records import Event, Kind
from goggles_io._util.extras import import_extra
from goggles_io.handlers._media import claim, write_video
from goggles_io.media import create_numpy_vector_field_visualization, to_uint8

__all__ = [
    "API_KEY_VAR",
    "ArtifactUploader",
    "Videos",
    "histogram",
    "image",
    "numeric_fields",
    "row_entries",
    "trajectories_figure",
    "vector_field",
    "wandb_env",
]

_ARTIFACT_NAME = re.compile(r"[^A-Za-z0-9._-]")

API_KEY_VAR = "WANDB_API_KEY"
# Set by wandb in a process that started a run (it points at that process's own service) or
# private: never carried to another process.
_NOT_CARRIED = frozenset({API_KEY_VAR, "WANDB_SERVICE"})


def wandb_env() -> dict[str, str]:
    """The ``WANDB_*`` settings of this process, minus secrets and process-private ones."""
    return {
        k: v
        for k, v in os.environ.items()
        if k.startswith("WANDB_") and not k.startswith("WANDB__") and k not in _NOT_CARRIED
    }


# extra keys goggles_io itself sets; every other numeric keyword of a log call is a W&B column.
_INTERNAL_EXTRA = frozenset(
    {
        "bound",
        "nonfinite",
        "x_axis",
        "x",
        "name",
        "format",
        "fps",
        "bins",
        "static",
        "exc_text",
        "mode",
        "add_colorbar",
        "store_visualization",
    }
)


def numeric_fields(extra: Mapping[str, Any], prefix: str = "") -> dict[str, float | int]:
    """Numeric keyword fields of a log call, nested dicts flattened to dotted keys.

    robo-goggles logs them in the same step, so ``sim_time=t`` or ``custom_step={"time": t}``
    can be picked as a chart's x-axis in W&B (``sim_time``, ``custom_step.time``).
    """
    found: dict[str, float | int] = {}
    for key, value in extra.items():
        if not prefix and key in _INTERNAL_EXTRA:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found.update(numeric_fields(value, name + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found[name] = value
    return found


def image(wandb: Any, event: Event) -> Any:
    pixels = to_uint8(event.payload)
    if pixels.ndim == 3 and pixels.shape[-1] == 1:
        pixels = pixels[..., 0]
    return wandb.Image(pixels)


def histogram(wandb: Any, event: Event, key: str) -> Any:
    """A histogram series over steps, or robo-goggles' static custom chart of the samples."""
    values = event.payload
    if event.extra.get("static"):
        table = wandb.Table(columns=["values"], data=[[float(x)] for x in values.tolist()])
        return wandb.plot.histogram(table, "values", title=key)
    return wandb.Histogram(values, num_bins=int(event.extra.get("bins") or 64))


def vector_field(wandb: Any, event: Event) -> Any:
    """The field's picture (``mode`` and ``add_colorbar`` from the call), as an image."""
    field = event.payload
    while field.ndim > 3:
        field = field[0]
    picture = create_numpy_vector_field_visualization(
        field,
        mode=event.extra.get("mode") or "magnitude",
        add_colorbar=bool(event.extra.get("add_colorbar", False)),
    )
    return wandb.Image(picture)


def trajectories_figure(trajectories: Any) -> Any:
    """A plotly figure of ``(N, L, dim)`` trajectories: one NaN-separated path trace, markers
    coloured along each path, open starts and filled ends, axes at equal scale."""
    import numpy as np

    go = import_extra("plotly.graph_objects", purpose="W&B trajectories", extra="wandb")
    arr = np.asarray(trajectories, dtype=np.float64)
    if arr.ndim == 2:
        arr = arr[None]
    n, length, dim = arr.shape
    gaps = np.full((n, 1, dim), np.nan)
    joined = np.concatenate([arr, gaps], axis=1).reshape(-1, dim)
    along = np.concatenate([np.tile(np.arange(length, dtype=float), (n, 1)), gaps[..., 0]], 1)
    scatter = go.Scatter3d if dim == 3 else go.Scatter
    axes = {k: joined[:, i] for i, k in enumerate("xyz"[:dim])}
    marker = {"size": 2, "color": along.reshape(-1), "colorscale": "Viridis"}
    line = {"color": "rgba(110,110,110,0.45)", "width": 1}
    traces = [
        scatter(**axes, mode="lines+markers", line=line, marker=marker, name="paths"),
        scatter(**{k: arr[:, 0, i] for i, k in enumerate("xyz"[:dim])}, mode="markers",
                marker={"symbol": "circle-open", "size": 6}, name="start"),
        scatter(**{k: arr[:, -1, i] for i, k in enumerate("xyz"[:dim])}, mode="markers",
                marker={"symbol": "circle", "size": 6}, name="end"),
    ]  # fmt: skip
    figure = go.Figure(traces)
    if dim == 3:
        figure.update_layout(scene={"aspectmode": "data"})
    else:
        figure.update_layout(xaxis={"scaleanchor": "y"})
    return figure


class Videos:
    """Writes each video to a temporary GIF/MP4 that ``wandb.Video`` uploads; removed at close."""

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def value(self, wandb: Any, event: Event) -> Any:
        fmt = "mp4" if event.extra.get("format") == "mp4" else "gif"
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="goggles-wandb-")
        target = claim(Path(self._tmp.name), "video", fmt)
        write_video(event.payload, target, fmt, float(event.extra.get("fps") or 30))
        return wandb.Video(str(target), format=fmt)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


class ArtifactUploader:
    """Upload an artifact event as a ``wandb.Artifact`` on the scope's run.

    robo-goggles uploads only a ``{"path": file_or_dir, "name"?, "type"?, "aliases"?}`` mapping;
    content (bytes) and a ``pathlib.Path`` source are uploaded too, as type ``misc``, so an
    artifact logged to W&B is never silently left out.
    """

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def upload(self, wandb: Any, run: Any, event: Event) -> None:
        payload, extra = event.payload, event.extra
        ref = payload if isinstance(payload, Mapping) else {}
        name = str(ref.get("name") or extra.get("name") or "artifact")
        metadata = {k: v for k, v in extra.items() if k != "bound"}
        if isinstance(ref.get("metadata"), Mapping):
            metadata.update(ref["metadata"])
        if event.step is not None:
            metadata.setdefault("step", event.step)
        artifact = wandb.Artifact(
            name=_ARTIFACT_NAME.sub("_", name)[:128] or "artifact",
            type=str(ref.get("type") or "misc"),
            metadata=metadata,
        )
        source = Path(ref["path"]) if ref else None
        if isinstance(payload, (bytes, bytearray)):
            source = self._content_file(name, str(extra.get("format") or "bin"), payload)
        elif isinstance(payload, str):
            source = Path(payload)
        assert source is not None
        if source.is_dir():
            artifact.add_dir(str(source))
        else:
            artifact.add_file(str(source))
        run.log_artifact(artifact, aliases=list(ref.get("aliases") or []) or None)

    def _content_file(self, name: str, fmt: str, data: bytes | bytearray) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="goggles-wandb-artifacts-")
        stem = _ARTIFACT_NAME.sub("_", name.rsplit("/", 1)[-1]) or "artifact"
        target = claim(Path(self._tmp.name), stem, _ARTIFACT_NAME.sub("_", fmt) or "bin")
        target.write_bytes(data)
        return target

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def row_entries(wandb: Any, videos: Any, event: Event, state: Any) -> dict[str, Any]:
    """What ``event`` adds to its run's row: a metric event's numbers (against its custom
    x-axis when it has one, declared once per metric on ``state.run``), else one W&B value
    under the event's name; numeric ``extra`` fields beside either."""
    kind, extra = event.kind, event.extra
    if kind is Kind.METRIC:
        entries = dict(event.payload)
        axis = extra.get("x_axis")
        if axis is not None:
            for metric in entries:
                if metric not in state.axes:
                    state.axes.add(metric)
                    state.run.define_metric(metric, step_metric=axis)
            if "x" in extra:
                entries[axis] = extra["x"]
        entries.update(numeric_fields(extra))
        return entries
    name = str(extra.get("name") or kind.value)
    if kind is Kind.IMAGE:
        value: Any = image(wandb, event)
    elif kind is Kind.VIDEO:
        value = videos.value(wandb, event)
    elif kind is Kind.HISTOGRAM:
        value = histogram(wandb, event, name)
    elif kind is Kind.VECTOR_FIELD:
        value = vector_field(wandb, event)
    elif kind is Kind.TRAJECTORIES:
        value = wandb.Plotly(trajectories_figure(event.payload))
    elif kind is Kind.TABLE:
        value = wandb.Table(columns=list(event.payload["columns"]), data=event.payload["data"])
    else:  # TEXT: W&B shows strings in the run's history and summary
        value = str(event.payload)
    return {name: value, **numeric_fields(extra)}
