"""goggles_io.media's save_numpy_image / save_numpy_gif / save_numpy_mp4, read back from disk."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from goggles_io.media import save_numpy_gif, save_numpy_image, save_numpy_mp4, to_uint8

HAS_MP4 = importlib.util.find_spec("imageio_ffmpeg") is not None


class TestSaveNumpyImage:
    @pytest.mark.parametrize(
        ("fmt", "magic"), [("png", b"\x89PNG"), ("jpg", b"\xff\xd8\xff"), ("bmp", b"BM")]
    )
    def test_format_picks_the_encoder(self, tmp_path: Path, fmt: str, magic: bytes) -> None:
        """The format argument decides the bytes written, whatever the file is called."""
        target = tmp_path / "picture.img"
        save_numpy_image(np.zeros((8, 8, 3), np.uint8), target, fmt)

        assert magic == target.read_bytes()[: len(magic)]

    def test_png_keeps_exact_rgba_pixels(self, tmp_path: Path) -> None:
        """An RGBA uint8 image reads back from its PNG unchanged."""
        image = np.random.default_rng(0).integers(0, 256, (5, 7, 4), dtype=np.uint8)
        save_numpy_image(image, tmp_path / "a.png", "png")

        with Image.open(tmp_path / "a.png") as png:
            np.testing.assert_array_equal(image, np.asarray(png))

    def test_rgba_as_jpeg_raises_and_leaves_no_file(self, tmp_path: Path) -> None:
        """JPEG has no alpha: an (H, W, 4) image raises ValueError and writes nothing."""
        with pytest.raises(ValueError, match="alpha"):
            save_numpy_image(np.zeros((4, 4, 4), np.uint8), tmp_path / "a.jpg", "jpg")

        assert [] == list(tmp_path.iterdir())

    @pytest.mark.parametrize("shape", [(3, 8, 8), (8,), (2, 2, 2, 3)])
    def test_shape_that_is_no_image_raises(self, tmp_path: Path, shape: tuple[int, ...]) -> None:
        """A CHW, 1-D or 4-D array raises ValueError naming its shape."""
        with pytest.raises(ValueError, match=str(shape).replace("(", r"\(").replace(")", r"\)")):
            save_numpy_image(np.zeros(shape, np.uint8), tmp_path / "x.png", "png")

    def test_unknown_format_raises(self, tmp_path: Path) -> None:
        """format="bogus" raises ValueError listing the formats."""
        with pytest.raises(ValueError, match="'png'"):
            save_numpy_image(np.zeros((4, 4), np.uint8), tmp_path / "x", "bogus")


class TestToUint8:
    @settings(max_examples=100)
    @given(
        hnp.arrays(
            np.float64,
            (4, 4),
            elements=st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
        )
    )
    def test_any_float_image_becomes_uint8_of_the_same_shape(self, image: np.ndarray) -> None:
        """Any finite float image converts to uint8 pixels without error, shape kept."""
        pixels = to_uint8(image)

        assert (np.uint8, (4, 4)) == (pixels.dtype, pixels.shape)

    def test_nan_is_black_and_bool_is_0_or_255(self) -> None:
        """NaN pixels become 0; a bool image becomes 0/255."""
        assert [[0, 255]] == to_uint8(np.array([[np.nan, 1.0]])).tolist()
        assert [[0, 255]] == to_uint8(np.array([[False, True]])).tolist()


class TestSaveNumpyGif:
    def test_frames_loop_and_delay_are_written(self, tmp_path: Path) -> None:
        """A (T, H, W, 3) GIF holds T frames, the loop count and a 1/fps frame delay."""
        frames = np.random.default_rng(1).integers(0, 256, (6, 8, 8, 3), dtype=np.uint8)
        save_numpy_gif(frames, tmp_path / "a.gif", fps=10, loop=2)

        with Image.open(tmp_path / "a.gif") as gif:
            got = (gif.n_frames, gif.info["loop"], gif.info["duration"])
        assert (6, 2, 100) == got

    def test_channels_first_frames_are_accepted(self, tmp_path: Path) -> None:
        """(T, C, H, W) frames are written too (robo-goggles refuses them)."""
        save_numpy_gif(np.random.default_rng(2).random((3, 3, 8, 8)), tmp_path / "a.gif")

        with Image.open(tmp_path / "a.gif") as gif:
            assert (3, (8, 8)) == (gif.n_frames, gif.size)

    def test_a_single_image_raises(self, tmp_path: Path) -> None:
        """An (H, W) array is no video: ValueError naming the shapes accepted."""
        with pytest.raises(ValueError, match=r"\(T, H, W\)"):
            save_numpy_gif(np.zeros((8, 8)), tmp_path / "a.gif")


@pytest.mark.skipif(not HAS_MP4, reason="imageio-ffmpeg not installed ([media] extra)")
class TestSaveNumpyMp4:
    def test_frames_size_and_fps_read_back(self, tmp_path: Path) -> None:
        """An odd-sized (T, H, W) grey video is an MP4 of T even-sized colour frames at fps."""
        import imageio_ffmpeg

        save_numpy_mp4(np.random.default_rng(3).random((7, 15, 17)), tmp_path / "a.mp4", fps=12)
        reader = imageio_ffmpeg.read_frames(str(tmp_path / "a.mp4"))
        meta = next(reader)

        assert ((18, 16), 12.0, 7) == (tuple(meta["size"]), meta["fps"], sum(1 for _ in reader))

    def test_unknown_codec_raises_and_leaves_no_file(self, tmp_path: Path) -> None:
        """codec="bogus" raises ValueError naming it (robo-goggles returns silently)."""
        with pytest.raises(ValueError, match="bogus"):
            save_numpy_mp4(np.zeros((2, 8, 8, 3), np.uint8), tmp_path / "a.mp4", codec="bogus")

        assert not (tmp_path / "a.mp4").exists()
