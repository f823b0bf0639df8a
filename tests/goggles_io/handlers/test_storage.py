"""LocalStorageHandler: robo-goggles' log.jsonl and media folders, safe names, crash-tolerant reading."""

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
from goggles_io.handlers.storage import EVENTS_FILE, LOG_FILE, read_events, safe_filename
from support import started, wait_until

SCRIPT = Path(__file__).parent / "scripts" / "storage_writer.py"
SRC = Path(__file__).resolve().parents[3] / "src"
HOSTILE = ["..", "../../etc/passwd", "/abs/path", "a\x00b", "\\win\\x", ".hidden", "", "ü/é"]
HAS_MP4 = importlib.util.find_spec("imageio_ffmpeg") is not None


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
            (e["kind"], e.get("step"), e["payload"]) for e in events
        ]

    def test_non_finite_values_are_strict_json_and_read_back(self, tmp_path: Path) -> None:
        """NaN and infinities are written as strings (valid JSON) and read back as floats."""
        payload = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf, "text": "NaN"}
        _write(tmp_path, _event(gg.Kind.METRIC, payload))
        line = (tmp_path / LOG_FILE).read_text().splitlines()[0]

        json.loads(line, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
        got = read_events(tmp_path).events[0]["payload"]

        assert math.isnan(got["nan"])
        assert (math.inf, -math.inf, "NaN") == (got["inf"], got["ninf"], got["text"])

    def test_numpy_scalars_are_written_as_numbers(self, tmp_path: Path) -> None:
        """numpy scalars in a payload are written as plain JSON numbers."""
        _write(tmp_path, _event(gg.Kind.METRIC, {"a": np.float32(0.5), "b": np.int64(7)}))

        assert {"a": 0.5, "b": 7} == read_events(tmp_path).events[0]["payload"]

    def test_reopening_appends(self, tmp_path: Path) -> None:
        """A second open/close cycle appends to log.jsonl instead of truncating it."""
        _write(tmp_path, _event(gg.Kind.TEXT, "first"))
        _write(tmp_path, _event(gg.Kind.TEXT, "second"))

        assert ["first", "second"] == [e["payload"] for e in read_events(tmp_path).events]


class TestTornLines:
    def test_truncated_last_line_is_skipped_and_counted(self, tmp_path: Path) -> None:
        """A file cut in the middle of its last line reads the whole lines and counts one skip."""
        _write(tmp_path, *(_event(gg.Kind.METRIC, {"loss": i}, step=i) for i in range(5)))
        events_file = tmp_path / LOG_FILE
        os.truncate(events_file, events_file.stat().st_size - 7)

        log = read_events(events_file)

        assert ([0, 1, 2, 3], [5]) == ([e["step"] for e in log.events], log.skipped_lines)

    def test_line_cut_inside_a_utf8_character_is_skipped(self, tmp_path: Path) -> None:
        """A cut inside a multi-byte character is a skipped line, not a decode error."""
        _write(tmp_path, _event(gg.Kind.TEXT, "ok"), _event(gg.Kind.TEXT, "ü" * 50))
        events_file = tmp_path / LOG_FILE
        data = events_file.read_bytes()
        cut = data.rindex("ü".encode()) + 1  # between the two bytes of the last "ü"
        events_file.write_bytes(data[:cut])

        log = read_events(tmp_path)

        assert (["ok"], 1) == ([e["payload"] for e in log.events], log.skipped)

    def test_reopening_after_a_torn_line_removes_it(self, tmp_path: Path) -> None:
        """Re-opening after a crash cuts the torn line off: the file stays strict JSON lines."""
        _write(tmp_path, _event(gg.Kind.TEXT, "a"), _event(gg.Kind.TEXT, "b"))
        events_file = tmp_path / LOG_FILE
        os.truncate(events_file, events_file.stat().st_size - 5)
        _write(tmp_path, _event(gg.Kind.TEXT, "c"))

        log = read_events(tmp_path)

        assert (["a", "c"], 0) == ([e["payload"] for e in log.events], log.skipped)
        assert all(json.loads(line) for line in events_file.read_bytes().splitlines())

    def test_file_of_a_sigkilled_writer_always_reads(self, tmp_path: Path) -> None:
        """After SIGKILL mid-writing, reading never fails and keeps every whole line."""
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        with started(
            [sys.executable, str(SCRIPT), str(tmp_path)], stdout=subprocess.PIPE, env=env
        ) as proc:
            wait_until(lambda: (tmp_path / LOG_FILE).exists(), what="writer started")
            wait_until(lambda: (tmp_path / LOG_FILE).stat().st_size > 50_000, what="lines")
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

        with Image.open(tmp_path / line["payload"]) as png:
            pixels = np.asarray(png)

        assert ("images/sample_1.png", [6, 5, 3]) == (line["payload"], line["shape"])
        np.testing.assert_array_equal(image, pixels)

    def test_float_grayscale_image_is_scaled_to_uint8(self, tmp_path: Path) -> None:
        """A float image in [0, 1] with one channel is written as an 8-bit grayscale PNG."""
        image = np.array([[0.0, 1.0], [0.5, 0.25]], dtype=np.float32)[..., None]
        _write(tmp_path, _event(gg.Kind.IMAGE, image, name="gray"))

        with Image.open(tmp_path / "images" / "gray_1.png") as png:
            pixels = np.asarray(png)

        np.testing.assert_array_equal([[0, 255], [128, 64]], pixels)

    def test_values_outside_0_1_are_min_max_scaled(self, tmp_path: Path) -> None:
        """A float image reaching 2.0, or an int64 one, is scaled min-max to 0-255."""
        floats = np.array([[0.0, 2.0], [1.0, 0.5]])
        ints = np.array([[-10, 10], [0, 5]], dtype=np.int64)
        _write(
            tmp_path, _event(gg.Kind.IMAGE, floats, name="f"), _event(gg.Kind.IMAGE, ints, name="i")
        )

        with (
            Image.open(tmp_path / "images" / "f_1.png") as a,
            Image.open(tmp_path / "images" / "i_1.png") as b,
        ):
            got = (np.asarray(a).tolist(), np.asarray(b).tolist())

        assert ([[0, 255], [128, 64]], [[0, 255], [128, 191]]) == got

    def test_gif_video_has_every_frame(self, tmp_path: Path) -> None:
        """A (T, C, H, W) video logged as gif holds T frames."""
        video = np.random.default_rng(1).integers(0, 256, (4, 3, 8, 8), dtype=np.uint8)
        _write(tmp_path, _event(gg.Kind.VIDEO, video, name="vid", fps=10.0, format="gif"))

        with Image.open(tmp_path / "videos" / "vid_1.gif") as gif:
            frames = gif.n_frames

        assert 4 == frames

    @pytest.mark.skipif(not HAS_MP4, reason="imageio-ffmpeg not installed")
    def test_mp4_video_reads_back_with_imageio_ffmpeg(self, tmp_path: Path) -> None:
        """An odd-sized video is written as an MP4 holding every frame, padded to even."""
        import imageio_ffmpeg

        video = np.zeros((5, 3, 9, 7), dtype=np.uint8)
        _write(tmp_path, _event(gg.Kind.VIDEO, video, name="v", fps=5.0), video_format="mp4")

        reader = imageio_ffmpeg.read_frames(str(tmp_path / "videos" / "v_1.mp4"))
        meta = next(reader)
        frames = list(reader)

        assert ((8, 10), 5) == (tuple(meta["size"]), len(frames))

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

    @pytest.mark.skipif(HAS_MP4, reason="imageio-ffmpeg is installed")
    def test_mp4_without_ffmpeg_raises_configuration_error(self, tmp_path: Path) -> None:
        """Asking for mp4 without imageio-ffmpeg fails at construction with the install hint."""
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
        assert (tmp_path / events[2]["payload"]).is_file()


def _logged(root: Path, log_calls: Any) -> list[dict[str, Any]]:
    """Run ``log_calls(logger)`` through a LocalStorageHandler on ``root``; the lines written."""
    gg.attach(gg.LocalStorageHandler(root, name="layout.storage"), scopes=["global"])
    log_calls(gg.get_logger("layout", with_metrics=True, run="r1"))
    gg.finish(timeout=60)
    return read_events(root).events


class TestRoboGogglesLayout:
    def test_open_creates_log_jsonl_and_every_media_folder(self, tmp_path: Path) -> None:
        """open() makes log.jsonl and robo-goggles' six media folders before any event."""
        _write(tmp_path)

        assert ["artifacts", "histograms", "images", "log.jsonl", "trajectories",
                "vector_fields", "videos"] == sorted(p.name for p in tmp_path.iterdir())  # fmt: skip

    def test_line_has_robo_goggles_keys_in_order_then_ours(self, tmp_path: Path) -> None:
        """A line starts kind, scope, payload, filepath, lineno, level, step, time, extra.*."""
        lines = _logged(tmp_path, lambda log: log.warning("careful", step=0, time=1.5, why="x"))

        assert ["kind", "scope", "payload", "filepath", "lineno", "level", "step", "time",
                "extra.run", "extra.why", "timestamp", "logger", "pid"] == list(lines[0])  # fmt: skip

    def test_unset_step_and_time_are_left_out(self, tmp_path: Path) -> None:
        """step=None and time=None write no key, as robo-goggles does; level only on logs."""
        _write(tmp_path, _event(gg.Kind.METRIC, {"a": 1.0}, step=None))

        line = read_events(tmp_path).events[0]
        assert set() == {"step", "time", "level"} & set(line)

    def test_jpg_is_a_real_jpeg_with_its_extension(self, tmp_path: Path) -> None:
        """image(format="jpg") writes images/<name>_<step>.jpg holding JPEG bytes."""
        lines = _logged(
            tmp_path,
            lambda log: log.image(
                np.full((8, 8, 3), 90, np.uint8), name="cam", format="jpg", step=5
            ),
        )

        assert ("images/cam_5.jpg", "jpg") == (lines[0]["payload"], lines[0]["extra.format"])
        assert b"\xff\xd8\xff" == (tmp_path / "images" / "cam_5.jpg").read_bytes()[:3]

    def test_slash_in_a_name_makes_a_sub_folder(self, tmp_path: Path) -> None:
        """push({"eval/confusion": img}) writes images/eval/confusion_<step>.png."""
        lines = _logged(
            tmp_path, lambda log: log.push({"eval/confusion": np.zeros((4, 4), np.uint8)}, step=2)
        )

        assert "images/eval/confusion_2.png" == lines[0]["payload"]
        assert (tmp_path / "images" / "eval" / "confusion_2.png").is_file()

    def test_unnamed_image_is_stored_under_its_kind(self, tmp_path: Path) -> None:
        """An image logged without a name is images/image_<step>.png and has no extra.name."""
        lines = _logged(tmp_path, lambda log: log.image(np.zeros((4, 4), np.uint8), step=3))

        assert ("images/image_3.png", False) == (lines[0]["payload"], "extra.name" in lines[0])

    def test_default_video_is_a_30_fps_gif(self, tmp_path: Path) -> None:
        """video() with robo-goggles' defaults writes a GIF whose frames last 1/30 s."""
        lines = _logged(
            tmp_path, lambda log: log.video(np.random.rand(3, 8, 8, 3), name="v", step=7)
        )

        with Image.open(tmp_path / lines[0]["payload"]) as gif:
            duration = gif.info["duration"]
        assert ("videos/v_7.gif", 30, "gif") == (
            lines[0]["payload"],
            lines[0]["extra.fps"],
            lines[0]["extra.format"],
        )
        assert 30 == duration  # 1000 / 30 ms, in GIF's 1/100 s steps

    def test_histogram_samples_and_static_flag(self, tmp_path: Path) -> None:
        """histogram(static=True) stores the raw samples as .npy and writes extra.static."""
        samples = np.random.default_rng(3).normal(size=50)
        lines = _logged(tmp_path, lambda log: log.histogram(samples, name="h", static=True, step=9))

        assert ("histograms/h_9.npy", True) == (lines[0]["payload"], lines[0]["extra.static"])
        np.testing.assert_array_equal(samples, np.load(tmp_path / "histograms" / "h_9.npy"))

    def test_vector_field_npy_and_picture_on_request(self, tmp_path: Path) -> None:
        """A field is stored as .npy; store_visualization=True adds a PNG, False does not."""
        field = np.random.default_rng(4).normal(size=(12, 12, 2))

        def calls(log: Any) -> None:
            log.vector_field(field, name="vf", step=10, store_visualization=True, mode="vorticity")
            log.vector_field(field, name="plain", step=10, store_visualization=False)

        pictured, plain = _logged(tmp_path, calls)

        assert "vector_fields/visualizations/vf_10.png" == pictured["visualization"]
        assert "visualization" not in plain
        np.testing.assert_array_equal(field, np.load(tmp_path / plain["payload"]))
        with Image.open(tmp_path / pictured["visualization"]) as png:
            assert "PNG" == png.format

    def test_trajectories_npy_and_picture(self, tmp_path: Path) -> None:
        """trajectories() stores (N, L, dim) as .npy and, on request, a PNG beside it."""
        paths = np.cumsum(np.random.default_rng(5).normal(size=(3, 20, 2)), axis=1)
        lines = _logged(
            tmp_path,
            lambda log: log.trajectories(paths, name="traj", step=11, store_visualization=True),
        )

        assert ("trajectories/traj_11.npy", "trajectories/visualizations/traj_11.png") == (
            lines[0]["payload"], lines[0]["visualization"],
        )  # fmt: skip
        np.testing.assert_array_equal(paths, np.load(tmp_path / "trajectories" / "traj_11.npy"))

    def test_artifact_reference_directory_is_copied(self, tmp_path: Path) -> None:
        """artifact({"path": dir}) copies the directory to artifacts/<name>_<step>."""
        source = tmp_path / "ckpt"
        source.mkdir()
        (source / "params.npy").write_bytes(b"p")
        run = tmp_path / "run"
        lines = _logged(
            run,
            lambda log: log.artifact(
                {"path": source, "name": "model", "type": "checkpoint"}, step=4
            ),
        )

        assert "artifacts/model_4" == lines[0]["payload"]
        assert b"p" == (run / "artifacts" / "model_4" / "params.npy").read_bytes()

    def test_dictionary_spreads_by_type(self, tmp_path: Path) -> None:
        """dictionary() writes name/key metrics, name/key_i for 1-D, an image and a field file."""
        data = {"s": 1.0, "v": np.arange(2.0), "im": np.zeros((4, 4)), "vf": np.zeros((4, 4, 2))}
        lines = _logged(tmp_path, lambda log: log.dictionary("d", data, step=12))

        assert [("metric", {"d/s": 1.0, "d/v_0": 0.0, "d/v_1": 1.0}), ("image", "images/d/im_12.png"),
                ("vector_field", "vector_fields/d/vf_12.npy")] == [(e["kind"], e["payload"]) for e in lines]  # fmt: skip

    def test_old_runs_events_jsonl_still_reads(self, tmp_path: Path) -> None:
        """A run written before log.jsonl existed reads through read_events as before."""
        (tmp_path / EVENTS_FILE).write_text(
            '{"kind": "metric", "step": 1, "payload": {"a": 2.0}, "extra": {}}\n'
        )

        assert [{"a": 2.0}] == [e["payload"] for e in read_events(tmp_path).events]

    def test_lines_read_back_as_events(self, tmp_path: Path) -> None:
        """EventLog.to_events() rebuilds each line as an Event with its flat extras and time."""
        lines = _logged(tmp_path, lambda log: log.scalar("loss", 0.5, step=2, time=7.5))
        del lines

        (event,) = read_events(tmp_path).to_events()
        assert (gg.Kind.METRIC, {"loss": 0.5}, 2, 7.5, "r1") == (
            event.kind, event.payload, event.step, event.time, event.extra["run"],
        )  # fmt: skip
