"""GogglesLogger's media and data calls as robo-goggles 0.3.6 names them (``_api/media.py``,
``_api/data.py``): the event each call emits, and the bad input each refuses at the call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import goggles_io as gg
from goggles_io import Kind
from goggles_io.exceptions import InvalidPayloadError
from goggles_io.testing import MemoryHandler, delivered


def _log() -> gg.GogglesLogger:
    return gg.get_logger("media", with_metrics=True)  # type: ignore[return-value]


class TestTimeAndNames:
    @pytest.mark.parametrize(
        ("call", "arg"),
        [("image", np.zeros((4, 4), np.uint8)), ("video", np.zeros((2, 4, 4), np.uint8)),
         ("histogram", np.arange(5.0)), ("vector_field", np.zeros((4, 4, 2))),
         ("trajectories", np.zeros((2, 3, 2))), ("artifact", "text")],
    )  # fmt: skip
    def test_time_lands_on_event_time(self, mem: MemoryHandler, call: str, arg: object) -> None:
        """time= on every media call is the event's time, not an extra field."""
        getattr(_log(), call)(arg, step=1, time=12.5)

        event = delivered(mem)[0]
        assert (12.5, False) == (event.time, "time" in event.extra)

    def test_unnamed_media_carries_no_name(self, mem: MemoryHandler) -> None:
        """image() without a name sends no extra["name"]; its step counter is "image"."""
        _log().image(np.zeros((4, 4), np.uint8))
        _log().image(np.zeros((4, 4), np.uint8))

        assert [(0, False), (1, False)] == [(e.step, "name" in e.extra) for e in delivered(mem)]

    def test_bad_time_raises(self) -> None:
        """A time that is not a finite number raises InvalidPayloadError naming time."""
        with pytest.raises(InvalidPayloadError, match="time"):
            _log().histogram(np.arange(3.0), time=float("nan"))


class TestRoboGogglesDefaults:
    def test_video_defaults_to_a_30_fps_gif(self, mem: MemoryHandler) -> None:
        """video() without fps/format carries fps 30 and format gif, as robo-goggles."""
        _log().video(np.zeros((2, 4, 4, 3), np.uint8), step=0)

        assert {"fps": 30, "format": "gif"} == dict(delivered(mem)[0].extra)

    def test_histogram_takes_histogram_and_static(self, mem: MemoryHandler) -> None:
        """histogram(histogram=..., static=True) is robo-goggles' keyword form; static travels."""
        _log().histogram(histogram=[1.0, 2.0], name="h", static=True, step=0)

        event = delivered(mem)[0]
        assert ([1.0, 2.0], True) == (event.payload.tolist(), event.extra["static"])

    @pytest.mark.parametrize(("fmt", "says"), [("bogus", "format must be"), ("jpg", "alpha")])
    def test_image_format_is_checked_at_the_call(self, fmt: str, says: str) -> None:
        """An unknown format, or an RGBA image as jpg, raises InvalidPayloadError."""
        with pytest.raises(InvalidPayloadError, match=says):
            _log().image(np.zeros((4, 4, 4), np.uint8), format=fmt)

    def test_video_format_is_checked_at_the_call(self) -> None:
        """format="avi" raises InvalidPayloadError listing gif and mp4."""
        with pytest.raises(InvalidPayloadError, match="'gif', 'mp4'"):
            _log().video(np.zeros((2, 4, 4), np.uint8), format="avi")


class TestTrajectories:
    def test_event_is_the_copied_array(self, mem: MemoryHandler) -> None:
        """trajectories() emits a TRAJECTORIES event of a private copy with its extras."""
        paths = np.zeros((2, 5, 3))
        _log().trajectories(paths, name="p", step=4, store_visualization=True)
        paths[:] = 1

        event = delivered(mem)[0]
        assert (Kind.TRAJECTORIES, 0.0, 4) == (event.kind, float(event.payload.sum()), event.step)
        assert {"name": "p", "store_visualization": True} == dict(event.extra)

    @pytest.mark.parametrize("shape", [(2, 5, 4), (5,), (2, 1, 2), (2, 2, 2, 2)])
    def test_bad_shape_raises(self, shape: tuple[int, ...]) -> None:
        """dim 4, a 1-D array, single points or 4-D input raise InvalidPayloadError."""
        with pytest.raises(InvalidPayloadError, match="trajectories"):
            _log().trajectories(np.zeros(shape))


class TestDictionary:
    def test_values_are_routed_by_type(self, mem: MemoryHandler) -> None:
        """Numbers and 1-D arrays are name/key metrics, 2-D an image, (H, W, 2) a vector field."""
        _log().dictionary("d", {"s": 2, "v": np.arange(2.0), "im": np.zeros((3, 3)),
                                "vf": np.zeros((3, 3, 2))}, step=7)  # fmt: skip

        events = delivered(mem)
        assert [(Kind.METRIC, {"d/s": 2, "d/v_0": 0.0, "d/v_1": 1.0}), (Kind.IMAGE, "d/im"),
                (Kind.VECTOR_FIELD, "d/vf")] == [
            (e.kind, e.payload if e.kind is Kind.METRIC else e.extra["name"]) for e in events
        ]  # fmt: skip
        assert {7} == {e.step for e in events}

    def test_unsupported_value_raises_before_anything_is_logged(self, mem: MemoryHandler) -> None:
        """A str value raises InvalidPayloadError naming its key; no other key was logged."""
        with pytest.raises(InvalidPayloadError, match="d/label"):
            _log().dictionary("d", {"ok": 1.0, "label": "cat"}, step=0)

        assert [] == delivered(mem)

    def test_data_must_be_a_mapping(self) -> None:
        """A list for data raises InvalidPayloadError (robo-goggles: AttributeError)."""
        with pytest.raises(InvalidPayloadError, match="mapping"):
            _log().dictionary("d", [1, 2])  # type: ignore[arg-type]


class TestArtifactReference:
    def test_reference_travels_with_an_absolute_path(
        self, mem: MemoryHandler, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """{"path": relative, ...} under the default format is a reference made absolute."""
        (tmp_path / "ckpt.bin").write_bytes(b"w")
        monkeypatch.chdir(tmp_path)
        _log().artifact({"path": "ckpt.bin", "name": "model", "aliases": ["best"]}, step=1)

        event = delivered(mem)[0]
        assert {"path": str(tmp_path / "ckpt.bin"), "name": "model", "aliases": ["best"]} == (
            event.payload
        )
        assert "model" == event.extra["name"]

    def test_missing_path_raises(self, tmp_path: Path) -> None:
        """A reference to a path that does not exist raises InvalidPayloadError at the call."""
        with pytest.raises(InvalidPayloadError, match="existing file"):
            _log().artifact({"path": str(tmp_path / "gone")})

    def test_mapping_with_a_format_is_content(self, mem: MemoryHandler) -> None:
        """A mapping with a "path" key but format="json" is JSON content, not a reference."""
        _log().artifact({"path": "/nowhere"}, name="cfg", format="json")

        assert b'{\n  "path": "/nowhere"\n}' == delivered(mem)[0].payload
