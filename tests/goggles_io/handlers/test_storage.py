"""LocalStorageHandler: JSON lines, media files, safe names, crash-tolerant reading."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

import goggles_io as gg
from goggles_io.exceptions import ConfigurationError, InvalidNameError
from goggles_io.handlers.base import handler_from_dict
from goggles_io.handlers.storage import EVENTS_FILE, read_events, safe_filename
from support import wait_until

SCRIPT = Path(__file__).parents[1] / "scripts" / "storage_writer.py"
SRC = Path(__file__).resolve().parents[3] / "src"
HOSTILE = ["..", "../../etc/passwd", "/abs/path", "a\x00b", "\\win\\x", ".hidden", "", "ü/é"]
HAS_PYAV = importlib.util.find_spec("av") is not None


def _event(kind: gg.Kind, payload: Any, step: int | None = 1, **extra: Any) -> gg.Event:
    return gg.Event(kind=kind, scope="global", payload=payload, step=step, extra=extra)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _write(root: Path, *events: gg.Event, **options: Any) -> gg.LocalStorageHandler:
    handler = gg.LocalStorageHandler(root, **options)
    handler.open()
    for event in events:
        handler.handle(event)
    handler.close()
    return handler


class TestSafeFilename:
    @pytest.mark.parametrize("name", HOSTILE)
    def test_hostile_names_become_one_plain_component(self, name: str) -> None:
        """Separators, dots, NUL and non-ASCII never survive into the file name."""
        safe = safe_filename(name)

        assert safe and not safe.startswith(".")
        assert not set(safe) & {"/", "\\", "\x00"}

    @settings(max_examples=200)
    @given(name=st.text())
    def test_any_name_stays_inside_the_directory(self, name: str) -> None:
        """For any text, the name resolves to a direct child of the directory."""
        root = Path("/tmp/run")

        target = (root / safe_filename(name)).resolve()

        assert root.resolve() == target.parent
        assert 1 <= len(safe_filename(name)) <= 120

    def test_non_string_name_raises_invalid_name(self) -> None:
        """A name that is not a str raises InvalidNameError naming the value."""
        with pytest.raises(InvalidNameError, match="42"):
            safe_filename(42)  # type: ignore[arg-type]


class TestLocalStorageHandlerLines:
    def test_events_are_written_as_json_lines(self, tmp_path: Path) -> None:
        """Each event becomes one strict-JSON line with kind, step, scope and payload."""
        _write(
            tmp_path,
            _event(gg.Kind.LOG, "hello", step=None),
            _event(gg.Kind.METRIC, {"loss": 0.5}, step=3),
        )

        events = read_events(tmp_path).events

        assert [("log", None, "hello"), ("metric", 3, {"loss": 0.5})] == [
            (e["kind"], e["step"], e["payload"]) for e in events
        ]

    def test_non_finite_values_are_strict_json_and_read_back(self, tmp_path: Path) -> None:
        """NaN and infinities are written as strings (valid JSON) and read back as floats."""
        payload = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "text": "NaN"}
        _write(tmp_path, _event(gg.Kind.METRIC, payload))
        line = (tmp_path / EVENTS_FILE).read_text().splitlines()[0]

        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
        got = read_events(tmp_path).events[0]["payload"]

        assert math.isnan(got["nan"])
        assert (math.inf, -math.inf, "NaN") == (got["inf"], got["ninf"], got["text"])

    def test_numpy_scalars_are_written_as_numbers(self, tmp_path: Path) -> None:
        """numpy scalars in a payload are written as plain JSON numbers."""
        _write(tmp_path, _event(gg.Kind.METRIC, {"a": np.float32(0.5), "b": np.int64(7)}))

        assert {"a": 0.5, "b": 7} == read_events(tmp_path).events[0]["payload"]

    def test_reopening_appends(self, tmp_path: Path) -> None:
        """A second open/close cycle appends to events.jsonl instead of truncating it."""
        _write(tmp_path, _event(gg.Kind.TEXT, "first"))
        _write(tmp_path, _event(gg.Kind.TEXT, "second"))

        assert ["first", "second"] == [e["payload"] for e in read_events(tmp_path).events]


class TestTornLines:
    def test_truncated_last_line_is_skipped_and_counted(self, tmp_path: Path) -> None:
        """A file cut in the middle of its last line reads the whole lines and counts one skip."""
        _write(tmp_path, *(_event(gg.Kind.METRIC, {"loss": i}, step=i) for i in range(5)))
        events_file = tmp_path / EVENTS_FILE
        os.truncate(events_file, events_file.stat().st_size - 7)

        log = read_events(events_file)

        assert ([0, 1, 2, 3], [5]) == ([e["step"] for e in log.events], log.skipped_lines)

    def test_line_cut_inside_a_utf8_character_is_skipped(self, tmp_path: Path) -> None:
        """A cut inside a multi-byte character is a skipped line, not a decode error."""
        _write(tmp_path, _event(gg.Kind.TEXT, "ok"), _event(gg.Kind.TEXT, "ü" * 50))
        events_file = tmp_path / EVENTS_FILE
        data = events_file.read_bytes()
        cut = data.rindex("ü".encode()) + 1  # between the two bytes of the last "ü"
        events_file.write_bytes(data[:cut])

        log = read_events(tmp_path)

        assert (["ok"], 1) == ([e["payload"] for e in log.events], log.skipped)

    def test_writing_after_a_torn_line_starts_a_new_line(self, tmp_path: Path) -> None:
        """Re-opening after a crash never glues a new line onto the torn one."""
        _write(tmp_path, _event(gg.Kind.TEXT, "a"), _event(gg.Kind.TEXT, "b"))
        events_file = tmp_path / EVENTS_FILE
        os.truncate(events_file, events_file.stat().st_size - 5)
        _write(tmp_path, _event(gg.Kind.TEXT, "c"))

        log = read_events(tmp_path)

        assert (["a", "c"], 1) == ([e["payload"] for e in log.events], log.skipped)

    def test_file_of_a_sigkilled_writer_always_reads(self, tmp_path: Path) -> None:
        """After SIGKILL mid-writing, reading never fails and keeps every whole line."""
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), str(tmp_path)], stdout=subprocess.PIPE, env=env
        )
        wait_until(lambda: (tmp_path / EVENTS_FILE).exists(), what="writer started")
        wait_until(lambda: (tmp_path / EVENTS_FILE).stat().st_size > 50_000, what="lines")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)

        log = read_events(tmp_path)

        assert log.skipped <= 1
        assert list(range(len(log.events))) == [e["step"] for e in log.events]


class TestMediaFiles:
    def test_png_reads_back_with_pillow(self, tmp_path: Path) -> None:
        """A uint8 RGB image is written as a PNG with exactly the logged pixels."""
        image = np.random.default_rng(0).integers(0, 256, (6, 5, 3), dtype=np.uint8)
        _write(tmp_path, _event(gg.Kind.IMAGE, image, name="sample"))
        line = read_events(tmp_path).events[0]

        with Image.open(tmp_path / line["file"]) as png:
            pixels = np.asarray(png)

        assert ("images/sample_1.png", "png") == (line["file"], line["format"])
        np.testing.assert_array_equal(image, pixels)

    def test_float_grayscale_image_is_scaled_to_uint8(self, tmp_path: Path) -> None:
        """A float image in [0, 1] with one channel is written as an 8-bit grayscale PNG."""
        image = np.array([[0.0, 1.0], [0.5, 2.0]], dtype=np.float32)[..., None]
        _write(tmp_path, _event(gg.Kind.IMAGE, image, name="gray"))

        with Image.open(tmp_path / "images" / "gray_1.png") as png:
            pixels = np.asarray(png)

        np.testing.assert_array_equal([[0, 255], [128, 255]], pixels)

    def test_gif_video_has_every_frame(self, tmp_path: Path) -> None:
        """A (T, C, H, W) video logged as gif holds T frames."""
        video = np.random.default_rng(1).integers(0, 256, (4, 3, 8, 8), dtype=np.uint8)
        _write(tmp_path, _event(gg.Kind.VIDEO, video, name="vid", fps=10.0, format="gif"))

        with Image.open(tmp_path / "videos" / "vid_1.gif") as gif:
            frames = gif.n_frames

        assert 4 == frames

    @pytest.mark.skipif(not HAS_PYAV, reason="PyAV not installed")
    def test_mp4_video_reads_back_with_imageio(self, tmp_path: Path) -> None:
        """With PyAV, an odd-sized video is written as an MP4 with every frame."""
        import imageio.v3 as iio

        video = np.zeros((5, 3, 9, 7), dtype=np.uint8)
        _write(tmp_path, _event(gg.Kind.VIDEO, video, name="v", fps=5.0), video_format="mp4")

        frames = iio.imread(tmp_path / "videos" / "v_1.mp4", plugin="pyav")

        assert (5, 10, 8, 3) == frames.shape

    def test_histogram_values_round_trip_as_npy(self, tmp_path: Path) -> None:
        """Histogram values are saved losslessly as .npy."""
        values = np.random.default_rng(2).normal(size=100)
        _write(tmp_path, _event(gg.Kind.HISTOGRAM, values, name="weights"))

        np.testing.assert_array_equal(values, np.load(tmp_path / "histograms" / "weights_1.npy"))

    def test_artifacts_are_written_and_copied(self, tmp_path: Path) -> None:
        """Bytes are written to a file; a path is copied keeping its suffix."""
        source = tmp_path / "model.ckpt"
        source.write_bytes(b"weights")
        out = tmp_path / "run"
        _write(
            out,
            _event(gg.Kind.ARTIFACT, b"abc", step=None, name="notes", format="txt"),
            _event(gg.Kind.ARTIFACT, str(source), step=None),
        )

        assert b"abc" == (out / "artifacts" / "notes.txt").read_bytes()
        assert b"weights" == (out / "artifacts" / "model.ckpt").read_bytes()

    def test_missing_artifact_source_is_recorded_not_raised(self, tmp_path: Path) -> None:
        """A copy that fails leaves a line with the error and a count; handle() does not raise."""
        handler = _write(tmp_path, _event(gg.Kind.ARTIFACT, str(tmp_path / "gone.bin")))
        line = read_events(tmp_path).events[0]

        assert "FileNotFoundError" in line["error"]
        assert 1 == handler.media_errors

    def test_same_name_and_step_never_overwrites(self, tmp_path: Path) -> None:
        """Two images with one name and step get two files."""
        image = np.zeros((2, 2), dtype=np.uint8)
        _write(
            tmp_path, _event(gg.Kind.IMAGE, image, name="x"), _event(gg.Kind.IMAGE, image, name="x")
        )

        assert ["images/x_1-1.png", "images/x_1.png"] == [
            p.relative_to(tmp_path).as_posix() for p in _files(tmp_path / "images")
        ]

    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(name=st.sampled_from(HOSTILE) | st.text(), fmt=st.sampled_from(HOSTILE) | st.text())
    def test_hostile_names_and_formats_write_inside_the_directory(
        self, tmp_path_factory: Any, name: str, fmt: str
    ) -> None:
        """Whatever the name and format, the only files created are under the run directory."""
        base = tmp_path_factory.mktemp("hostile")
        run = base / "run"
        _write(run, _event(gg.Kind.ARTIFACT, b"x", name=name, format=fmt))

        outside = [p for p in _files(base) if run not in p.parents]
        artifacts = _files(run / "artifacts")

        assert ([], 1) == (outside, len(artifacts))


class TestLocalStorageHandlerConfig:
    def test_spec_round_trips_with_absolute_path(self, tmp_path: Path, monkeypatch: Any) -> None:
        """to_dict holds the absolute path, and from_dict rebuilds an equal configuration."""
        monkeypatch.chdir(tmp_path)
        handler = gg.LocalStorageHandler("runs/a", video_format="gif")

        rebuilt = handler_from_dict(handler.to_dict())

        assert str(tmp_path / "runs" / "a") == handler.to_dict()["data"]["path"]
        assert handler.to_dict() == rebuilt.to_dict()

    @pytest.mark.parametrize(
        ("kwargs", "key"),
        [
            ({"path": ""}, "path"),
            ({"path": 3}, "path"),
            ({"path": "x", "video_format": "avi"}, "video_format"),
        ],
    )
    def test_bad_options_raise_configuration_error(self, kwargs: Any, key: str) -> None:
        """An empty path, a non-path or an unknown video format raises naming the option."""
        with pytest.raises(ConfigurationError, match=key) as info:
            gg.LocalStorageHandler(**kwargs)

        assert key == info.value.key

    @pytest.mark.skipif(HAS_PYAV, reason="PyAV is installed")
    def test_mp4_without_pyav_raises_configuration_error(self, tmp_path: Path) -> None:
        """Asking for mp4 without PyAV fails at construction with the install hint."""
        with pytest.raises(ConfigurationError, match="split-telemetry"):
            gg.LocalStorageHandler(tmp_path, video_format="mp4")


class TestLocalStorageHandlerThroughBus:
    def test_logger_text_scalars_and_image_land_on_disk(self, tmp_path: Path) -> None:
        """Through attach/get_logger/finish, text, scalars and an image are all written."""
        gg.attach(gg.LocalStorageHandler(tmp_path, name="test.storage"), scopes=["global"])
        logger = gg.get_logger("test.storage", with_metrics=True)
        logger.info("started %d", 1)
        logger.scalar("loss", 0.25, step=1)
        logger.image(np.zeros((4, 4, 3), dtype=np.uint8), name="frame", step=1)
        gg.finish()

        events = read_events(tmp_path).events

        assert ["log", "metric", "image"] == [e["kind"] for e in events]
        assert "started 1" == events[0]["payload"]
        assert (tmp_path / events[2]["file"]).is_file()
