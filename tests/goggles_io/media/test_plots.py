"""goggles_io.media's pictures of trajectories and vector fields (matplotlib, Agg canvas)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from goggles_io.media import (
    create_numpy_trajectories_visualization,
    create_numpy_vector_field_visualization,
    save_numpy_trajectories_visualization,
    save_numpy_vector_field_visualization,
)

pytest.importorskip("matplotlib")
_PATHS = np.cumsum(np.random.default_rng(0).normal(size=(3, 20, 2)), axis=1)
_FIELD = np.stack(np.mgrid[-1:1:24j, -1:1:24j][::-1], axis=-1) * [1, -1]


class TestTrajectories:
    @pytest.mark.parametrize("paths", [_PATHS, _PATHS[0], np.dstack([_PATHS, _PATHS[..., :1]])])
    def test_picture_is_rgb_uint8(self, paths: np.ndarray) -> None:
        """(N, L, 2), (L, 2) and (N, L, 3) trajectories draw as a non-blank RGB uint8 image."""
        picture = create_numpy_trajectories_visualization(paths, dpi=50)

        assert (3, np.uint8) == (picture.shape[2], picture.dtype)
        assert picture.min() < picture.max()

    @pytest.mark.parametrize(
        ("paths", "says"),
        [(np.zeros((2, 5, 4)), "dim must be 2 or 3"), (np.zeros((2, 1, 2)), "L >= 2"),
         (np.full((1, 3, 2), np.nan), "finite"), (np.zeros(5), "shape")],
    )  # fmt: skip
    def test_bad_trajectories_raise_value_error(self, paths: np.ndarray, says: str) -> None:
        """A wrong dim, a single point, NaN or a 1-D array raise ValueError saying which."""
        with pytest.raises(ValueError, match=says):
            create_numpy_trajectories_visualization(paths)

    def test_save_writes_name_png_and_makes_the_folder(self, tmp_path: Path) -> None:
        """save_* writes <dir>/<name>.png, creating dir (a str dir works too)."""
        save_numpy_trajectories_visualization(_PATHS, str(tmp_path / "new"), "paths", dpi=50)

        with Image.open(tmp_path / "new" / "paths.png") as png:
            assert "PNG" == png.format


class TestVectorField:
    @pytest.mark.parametrize("mode", ["magnitude", "vorticity"])
    def test_both_modes_draw_an_rgb_picture(self, mode: str) -> None:
        """A rotating field draws as RGB uint8 in either mode; the colour bar widens it."""
        plain = create_numpy_vector_field_visualization(_FIELD, mode=mode, add_colorbar=False)
        barred = create_numpy_vector_field_visualization(_FIELD, mode=mode, add_colorbar=True)

        assert (3, np.uint8) == (plain.shape[2], plain.dtype)
        assert barred.shape[1] > plain.shape[1]

    def test_zero_field_draws_without_arrows_or_warnings(self) -> None:
        """An all-zero field still gives a picture (no arrows to scale)."""
        with np.errstate(all="raise"):
            picture = create_numpy_vector_field_visualization(np.zeros((8, 8, 2)), dpi=50)

        assert 3 == picture.ndim

    @pytest.mark.parametrize(
        ("kwargs", "says"),
        [({"mode": "curl"}, "mode must be"), ({"arrow_stride": 0}, "arrow_stride"),
         ({"vector_field": np.zeros((8, 8))}, "shape")],
    )  # fmt: skip
    def test_bad_arguments_raise_value_error(self, kwargs: dict, says: str) -> None:
        """An unknown mode, a zero stride or a field without components raise ValueError."""
        arguments = {"vector_field": _FIELD, **kwargs}
        with pytest.raises(ValueError, match=says):
            create_numpy_vector_field_visualization(**arguments)

    def test_save_writes_name_png(self, tmp_path: Path) -> None:
        """save_numpy_vector_field_visualization writes <dir>/<name>.png."""
        save_numpy_vector_field_visualization(_FIELD, tmp_path, "flow", mode="vorticity", dpi=50)

        assert (tmp_path / "flow.png").read_bytes()[:4] == b"\x89PNG"
