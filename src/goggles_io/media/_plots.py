"""Pictures of trajectories and vector fields, drawn with matplotlib (``[plot]`` extra).

Each ``create_*`` returns a uint8 RGB ``(H, W, 3)`` array (what W&B and the dashboard show);
each ``save_*`` writes ``<dir>/<name>.png``. matplotlib runs on its non-interactive Agg canvas
and each figure is closed after drawing, so a long run neither opens windows nor leaks figures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from goggles_io._util.extras import import_extra

__all__ = [
    "create_numpy_trajectories_visualization",
    "create_numpy_vector_field_visualization",
    "save_numpy_trajectories_visualization",
    "save_numpy_vector_field_visualization",
]

_MODES = ("magnitude", "vorticity")


def _figure(width_in: float, height_in: float, dpi: int) -> Any:
    import_extra("matplotlib", purpose="drawing trajectories and vector fields", extra="plot")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width_in, height_in), dpi=dpi)
    FigureCanvasAgg(figure)
    return figure


def _pixels(figure: Any) -> Any:
    import numpy as np

    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba())[..., :3].copy()


def _checked_trajectories(trajectories: Any) -> Any:
    import numpy as np

    arr = np.asarray(trajectories, dtype=np.float64)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        msg = (
            f"trajectories must have shape (N, L, dim) or (L, dim) (got {np.shape(trajectories)})."
        )
        raise ValueError(msg)
    if arr.shape[2] not in (2, 3):
        msg = f"trajectories dim must be 2 or 3 (got {arr.shape[2]})."
        raise ValueError(msg)
    if arr.shape[1] < 2:
        msg = f"trajectories need length L >= 2 (got {arr.shape[1]})."
        raise ValueError(msg)
    if not np.isfinite(arr).all():
        msg = "trajectories must be finite (NaN or inf found)."
        raise ValueError(msg)
    return arr


def create_numpy_trajectories_visualization(trajectories: Any, dpi: int = 200) -> Any:
    """Draw ``(N, L, dim)`` trajectories (dim 2 or 3, or one ``(L, dim)``) as an RGB image.

    Each path is a line coloured by its index, with its start as an open circle and its end
    as a filled one; the axes keep equal scale, so shapes are not distorted.

    Raises:
        ValueError: a wrong shape, fewer than two points, or a non-finite value.
    """
    import numpy as np

    arr = _checked_trajectories(trajectories)
    figure = _figure(4.8, 4.0, dpi)
    three_d = arr.shape[2] == 3
    axes = figure.add_subplot(projection="3d" if three_d else None)
    from matplotlib import colormaps

    colours = colormaps["viridis"](np.linspace(0.0, 1.0, max(len(arr), 2)))
    for path, colour in zip(arr, colours, strict=False):
        axes.plot(*path.T, color=colour, linewidth=1.0, alpha=0.8)
        axes.scatter(*path[0][:, None], facecolors="none", edgecolors=[colour], s=18)
        axes.scatter(*path[-1][:, None], color=[colour], s=18)
    if three_d:
        axes.set_box_aspect(np.ptp(arr.reshape(-1, 3), axis=0) + 1e-9)
    else:
        axes.set_aspect("equal", adjustable="datalim")
    axes.set_title(f"{len(arr)} trajectories")
    figure.tight_layout()
    return _pixels(figure)


def _curl(field: Any) -> Any:
    import numpy as np

    u, v = field[..., 0], field[..., 1]
    return np.gradient(v, axis=1) - np.gradient(u, axis=0)


def create_numpy_vector_field_visualization(
    vector_field: Any,
    mode: Literal["vorticity", "magnitude"] = "magnitude",
    arrow_stride: int = 8,
    dpi: int = 300,
    add_colorbar: bool = True,
) -> Any:
    """Draw an ``(H, W, 2+)`` field as an RGB image: a colour map plus arrows.

    ``mode="magnitude"`` colours each cell by its speed, ``"vorticity"`` by the field's curl
    (diverging colours, zero white); arrows are drawn every ``arrow_stride`` cells.

    Raises:
        ValueError: ``mode`` is neither ``"magnitude"`` nor ``"vorticity"``, the field is not
            ``(H, W, C)`` with C >= 2, or ``arrow_stride < 1``.
    """
    import numpy as np

    if mode not in _MODES:
        msg = f"mode must be 'magnitude' or 'vorticity' (got {mode!r})."
        raise ValueError(msg)
    field = np.asarray(vector_field, dtype=np.float64)
    if field.ndim != 3 or field.shape[-1] < 2 or min(field.shape[:2]) < 1:
        msg = f"vector_field must have shape (H, W, C) with C >= 2 (got {field.shape})."
        raise ValueError(msg)
    if int(arrow_stride) < 1:
        msg = f"arrow_stride must be >= 1 (got {arrow_stride!r})."
        raise ValueError(msg)
    height, width = field.shape[:2]
    scale = 1.25 / max(height, width)  # the longer side 1.25 in: 375 px at the default dpi
    figure = _figure(width * scale + (0.5 if add_colorbar else 0.0), height * scale, dpi)
    axes = figure.add_axes((0.0, 0.0, 1.0, 1.0)) if not add_colorbar else figure.add_subplot()
    if mode == "magnitude":
        image = axes.imshow(np.linalg.norm(field[..., :2], axis=-1), cmap="viridis", origin="lower")
    else:
        curl = _curl(field)
        limit = float(np.nanmax(np.abs(curl))) or 1.0
        image = axes.imshow(curl, cmap="RdBu_r", vmin=-limit, vmax=limit, origin="lower")
    stride = int(arrow_stride)
    arrows = field[::stride, ::stride, :2]
    if np.isfinite(arrows).all() and np.abs(arrows).max() > 0:  # quiver cannot scale a zero field
        ys, xs = np.mgrid[0:height:stride, 0:width:stride]
        axes.quiver(xs, ys, arrows[..., 0], arrows[..., 1], color="white", width=0.006)
    axes.set_axis_off()
    if add_colorbar:
        bar = figure.colorbar(image, ax=axes, fraction=0.08, pad=0.03)
        bar.ax.tick_params(labelsize=4)
        bar.set_label(mode, fontsize=5)
    return _pixels(figure)


def _save_png(image: Any, directory: str | os.PathLike[str], name: str) -> None:
    from goggles_io.media._files import save_numpy_image

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    save_numpy_image(image, folder / f"{name}.png", "png")


def save_numpy_trajectories_visualization(
    trajectories: Any, dir: str | os.PathLike[str], name: str, dpi: int = 200
) -> None:
    """Write :func:`create_numpy_trajectories_visualization` to ``<dir>/<name>.png``."""
    _save_png(create_numpy_trajectories_visualization(trajectories, dpi=dpi), dir, name)


def save_numpy_vector_field_visualization(
    vector_field: Any,
    dir: str | os.PathLike[str],
    name: str,
    mode: Literal["vorticity", "magnitude"] = "magnitude",
    arrow_stride: int = 8,
    dpi: int = 300,
    add_colorbar: bool = True,
) -> None:
    """Write :func:`create_numpy_vector_field_visualization` to ``<dir>/<name>.png``."""
    image = create_numpy_vector_field_visualization(
        vector_field, mode=mode, arrow_stride=arrow_stride, dpi=dpi, add_colorbar=add_colorbar
    )
    _save_png(image, dir, name)
