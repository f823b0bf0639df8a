"""The dashboard's JSON API and files over real HTTP on 127.0.0.1 (no browser)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

from goggles_io.runs import RunContext
from goggles_io.server.collector import Collector
from support import wait_until
from ui_runs import append_metric, robo_goggles_run, write_alert

LOCAL_RUN = """
import sys
import numpy as np
import goggles_io as gg
from goggles_io.handlers.storage import LocalStorageHandler
from goggles_io.runs import RunContext
run = RunContext(project="p", driver="d", slug="media", root=sys.argv[1])
gg.attach(LocalStorageHandler(run.dir, name="t.local"))
log = gg.get_logger("t", with_metrics=True)
log.set_x_axis("angle", "sim_time")
for s in range(5):
    log.scalar("loss", 1.0 / (s + 1), step=s)
    log.scalar("angle", s * 0.1, step=s, x=s * 0.5)
log.image(np.full((4, 4, 3), 200, dtype=np.uint8), name="camera", step=2)
gg.finish()
run.close()
print(run.dir)
"""


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            body = reply.read()
            kind = reply.headers.get("content-type", "")
            return reply.status, json.loads(body) if "json" in kind else body
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def runs_of(server: Collector) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in get(f"{server.url}/api/runs")[1]["runs"]}


def indexed(server: Collector, key: str, points: int) -> bool:
    run = runs_of(server).get(key)
    return run is not None and sum(run["metrics"].values()) >= points


def series(server: Collector, key: str, metric: str, **query: Any) -> dict[str, Any]:
    args = urllib.parse.urlencode({"run": key, "metric": metric, **query})
    return get(f"{server.url}/api/series?{args}")[1]["series"].get(key, {})


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GOGGLES_TRANSPORT": "inprocess"}
    done = subprocess.run([sys.executable, "-c", LOCAL_RUN, str(root)], capture_output=True,
                          text=True, timeout=120, env=env, check=True)  # fmt: skip
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def run(tmp_path: Path) -> Path:
    context = RunContext(project="p", driver="tests", slug="r", root=tmp_path / "runs")
    context.close()
    return context.dir


class TestRunsAndCharts:
    def test_local_storage_run_listed_with_metrics_and_media(self, local_run: Path) -> None:
        """A LocalStorageHandler run is listed as done, with its metrics and its image."""
        with Collector(run_dirs=[str(local_run.parent)]) as server:
            key = f"dir:{local_run.name}"
            wait_until(lambda: indexed(server, key, 10), timeout_s=60)
            (row,) = runs_of(server).values()
            _, media = get(f"{server.url}/api/media?run={key}")

        assert ("done", {"loss": 5, "angle": 5}, 4) == (
            row["status"],
            row["metrics"],
            row["last_step"],
        )
        assert [("image", "camera", 2)] == [
            (m["kind"], m["name"], m["step"]) for m in media["media"]
        ]

    def test_custom_axis_and_image_bytes(self, local_run: Path) -> None:
        """The custom axis gives the logged x values; the image file is served as a PNG."""
        with Collector(run_dirs=[str(local_run)]) as server:
            key = f"dir:{local_run.name}"
            wait_until(lambda: indexed(server, key, 10), timeout_s=60)
            angle = series(server, key, "angle", axis="custom")
            _, media = get(f"{server.url}/api/media?run={key}")
            status, png = get(server.url + media["media"][0]["url"])

        assert ([0.0, 0.5, 1.0, 1.5, 2.0], "sim_time") == (angle["x"], angle["x_axis"])
        assert (200, b"\x89PNG") == (status, png[:4])

    def test_missing_wall_time_is_said_not_replaced(self, run: Path) -> None:
        """A metric without wall time (a CSV without a time column) answers with a note, no points."""
        (run / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
        with Collector(run_dirs=[str(run)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: indexed(server, key, 2), timeout_s=60)
            got = series(server, key, "loss", axis="time")

        assert ([], "no wall time") == (got["x"], got["note"][:12])

    def test_million_points_keep_the_spike_and_every_point_exports(self, run: Path) -> None:
        """A full-range answer of 10^6 points is ~n buckets with the spike; the CSV export has all."""
        lines = [f"{s},{1.0 if s == 333_333 else (s % 100) / 100.0}\n" for s in range(1_000_000)]
        (run / "metrics.csv").write_text("step,loss\n" + "".join(lines))
        with Collector(run_dirs=[str(run)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: indexed(server, key, 1_000_000), timeout_s=180)
            got = series(server, key, "loss", n=500)
            zoomed = series(server, key, "loss", n=500, x0=1000, x1=1100)
            status, body = get(f"{server.url}/api/export?run={key}&metric=loss&format=csv")

        assert 1.0 == max(v for v in got["y"] if v is not None) and len(got["x"]) <= 2 * 501
        assert ("full", 103) == (zoomed["resolution"], len(zoomed["x"]))
        assert (200, 1_000_001) == (status, body.count(b"\n"))

    def test_live_lines_are_indexed_and_a_torn_line_waits(self, run: Path) -> None:
        """Lines appended while serving show up; a line without its newline waits for it."""
        append_metric(run, "loss", 1.0, 0)
        with Collector(run_dirs=[str(run)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: indexed(server, key, 1), timeout_s=60)
            with open(run / "events.jsonl", "a") as fh:
                fh.write('{"kind": "metric", "step": 1, "payload": {"loss": 0.5}')
            append_metric(run, "loss", 0.25, 2)  # completes nothing: the torn line swallows it
            with open(run / "events.jsonl", "a") as fh:
                fh.write("\n")
            append_metric(run, "loss", 0.125, 3)
            wait_until(lambda: indexed(server, key, 2), timeout_s=60)
            got = series(server, key, "loss")

        assert ([0.0, 3.0], [1.0, 0.125]) == (got["x"], got["y"])

    def test_rewritten_csv_is_read_again_without_duplicates(self, run: Path) -> None:
        """A metrics.csv replaced by a wider one (CsvHandler's header grew) is indexed afresh."""
        (run / "metrics.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
        with Collector(run_dirs=[str(run)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: indexed(server, key, 2), timeout_s=60)
            tmp = run / "metrics.csv.tmp"
            tmp.write_text("step,loss,acc\n0,1.0,\n1,0.5,\n2,0.25,0.9\n")
            os.replace(tmp, run / "metrics.csv")
            wait_until(lambda: indexed(server, key, 4), timeout_s=60)

            assert {"loss": 3, "acc": 1} == runs_of(server)[key]["metrics"]

    def test_steps_out_of_order_are_shown_sorted(self, run: Path) -> None:
        """CSV rows whose steps go back (an evaluation logged late) are drawn in step order."""
        (run / "metrics.csv").write_text("step,loss\n0,1.0\n20,0.2\n10,0.5\n")
        with Collector(run_dirs=[str(run)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: indexed(server, key, 3), timeout_s=60)
            got = series(server, key, "loss")

        assert ([0.0, 10.0, 20.0], [1.0, 0.5, 0.2]) == (got["x"], got["y"])

    def test_nan_points_are_listed(self, run: Path) -> None:
        """A NaN value is null in the line and its step is listed under ``nan``."""
        for step, value in enumerate([1.0, float("nan"), 0.5]):
            append_metric(run, "loss", value, step)
        with Collector(run_dirs=[str(run)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: indexed(server, key, 3), timeout_s=60)
            got = series(server, key, "loss")

        assert ([1.0, None, 0.5], [1.0]) == (got["y"], got["nan"])

    def test_group_band_is_mean_min_and_max(self, tmp_path: Path) -> None:
        """Two runs grouped give their mean with a min-max band on one x grid."""
        keys = []
        for offset in (0.0, 2.0):
            ctx = RunContext(project="p", driver="d", slug=f"g{offset}", root=tmp_path)
            ctx.close()
            for step in range(3):
                append_metric(ctx.dir, "loss", step + offset, step)
            keys.append(f"dir:{ctx.dir.name}")
        with Collector(run_dirs=[str(tmp_path)]) as server:
            for key in keys:
                wait_until(lambda key=key: indexed(server, key, 3), timeout_s=60)
            query = "&".join(f"run={k}" for k in keys)
            _, band = get(f"{server.url}/api/group?{query}&metric=loss&n=16")

        assert (2, 1.0, 0.0, 2.0) == (
            band["members"],
            band["mean"][0],
            band["lo"][0],
            band["hi"][0],
        )

    def test_collector_points_are_charted_and_stale_run_crashed(self) -> None:
        """Points posted over the protocol are charted; a silent run shows as crashed."""
        with Collector() as server:
            server.store.register({"run_id": "r1", "heartbeat_s": 0.05})
            server.store.add_points("r1", {"points": [{"seq": i, "name": "loss", "value": i * 1.0,
                                                  "step": i} for i in range(1, 4)]})  # fmt: skip
            wait_until(lambda: runs_of(server)["db:r1"]["status"] == "crashed")
            wait_until(lambda: indexed(server, "db:r1", 3), timeout_s=60)
            got = series(server, "db:r1", "loss")

        assert [1.0, 2.0, 3.0] == got["y"]


class TestRoboGogglesRuns:
    def test_listed_by_folder_with_every_media_kind(self, tmp_path: Path) -> None:
        """A run without run.kv (robo-goggles' layout) is listed by folder with each media kind."""
        robo = robo_goggles_run(tmp_path / "rg-run")
        with Collector(run_dirs=[str(tmp_path)]) as server:
            wait_until(lambda: indexed(server, "dir:rg-run", 3), timeout_s=60)
            row = runs_of(server)["dir:rg-run"]
            _, media = get(f"{server.url}/api/media?run=dir:rg-run")
            kinds = {m["kind"] for m in media["media"]}
            views = {}
            for m in media["media"]:
                if m["kind"] in ("histogram", "trajectories", "vector_field", "artifact"):
                    query = urllib.parse.urlencode(
                        {"run": "dir:rg-run", "path": m["file"], "kind": m["kind"]}
                    )
                    views[m["kind"]] = get(f"{server.url}/api/media/data?{query}")[0]

        assert ("rg-run", "unknown", 2) == (row["name"], row["status"], row["last_step"])
        assert {"image", "video", "histogram", "trajectories", "vector_field", "artifact"} == kinds
        assert (
            dict.fromkeys(("histogram", "trajectories", "vector_field", "artifact"), 200) == views
        )
        assert (robo / "log.jsonl").is_file() and not (robo / "run.kv").exists()


class TestCompareAndStats:
    def test_diff_flags_differing_typed_values(self, tmp_path: Path) -> None:
        """The config diff types values (1e-3 == 0.001) and flags only what differs."""
        keys = []
        for lr, seed in (("1e-3", "1"), ("0.001", "2")):
            ctx = RunContext(project="p", driver="d", slug="c", root=tmp_path)
            (ctx.dir / "config.kv").write_text(f"lr={lr}\nseed={seed}\n")
            ctx.close()
            keys.append(f"dir:{ctx.dir.name}")
        with Collector(run_dirs=[str(tmp_path)]) as server:
            wait_until(lambda: set(keys) <= set(runs_of(server)), timeout_s=60)
            _, diff = get(f"{server.url}/api/diff?run={keys[0]}&run={keys[1]}")

        rows = {r["key"]: (r["values"], r["differs"]) for r in diff["rows"]}
        assert {"lr": ([0.001, 0.001], False), "seed": ([1, 2], True)} == rows

    def test_stats_of_a_training_loop_say_why_they_are_empty(self, run: Path) -> None:
        """A run whose stats.jsonl holds no recognition stats gets a reason, not empty charts."""
        (run / "stats.jsonl").write_text(
            json.dumps({"kind": "metric_window_stats", "step": 1}) + "\n"
        )
        write_alert(run, "learner", "q_mean", 1280, "value_explosion in learner/q_mean")
        with Collector(run_dirs=[str(run)]) as server:
            _, stats = get(f"{server.url}/api/stats?run=dir:{run.name}")

        assert "no recognition stats" in stats["reason"] and [1280] == [
            a["step"] for a in stats["alerts"]
        ]


class TestSafety:
    def test_page_and_api_need_the_key_when_set(self, local_run: Path) -> None:
        """With a key, the page needs ?key= (which sets a cookie) and the API the cookie or header."""
        with Collector(api_key="k3y", run_dirs=[str(local_run)]) as server:
            denied, _ = get(f"{server.url}/api/runs")
            with urllib.request.urlopen(f"{server.url}/?key=k3y", timeout=30) as reply:
                cookie = reply.headers["set-cookie"].split(";")[0]
            allowed, _ = get(f"{server.url}/api/runs", {"Cookie": cookie})
            bearer, _ = get(f"{server.url}/api/runs", {"Authorization": "Bearer k3y"})

        assert (401, 200, 200) == (denied, allowed, bearer)
        assert "HttpOnly" in reply.headers["set-cookie"]

    @pytest.mark.parametrize("path", ["../run.kv", "/etc/passwd", "images/../../x", "run.kv/.."])
    def test_media_path_cannot_escape_the_run(self, local_run: Path, path: str) -> None:
        """A media path leaving the run directory is a 404, never the file."""
        (local_run.parent / "x").write_text("secret")
        with Collector(run_dirs=[str(local_run)]) as server:
            query = urllib.parse.urlencode({"run": f"dir:{local_run.name}", "path": path})
            status, body = get(f"{server.url}/api/media/file?{query}")
            data_status, _ = get(f"{server.url}/api/media/data?{query}&kind=histogram")

        assert (404, 404) == (status, data_status) and "error" in body

    def test_markup_in_names_is_data_not_markup(self) -> None:
        """Names are sent as JSON strings; the page itself holds no run data to inject into."""
        with Collector() as server:
            server.store.register({"run_id": "<script>x</script>", "config": {"<b>": "<i>"}})
            _, runs = get(f"{server.url}/api/runs")
            status, page = get(f"{server.url}/")

        assert "<script>x</script>" == runs["runs"][0]["run_id"]
        assert 200 == status and b"<script>x</script>" not in page

    def test_unknown_ui_path_and_method_are_json(self) -> None:
        """Unknown paths get a JSON 404 and other methods a JSON 405, on the UI side too."""
        with Collector() as server:
            status, body = get(f"{server.url}/api/nothing")
            request = urllib.request.Request(f"{server.url}/api/runs", method="DELETE")
            with pytest.raises(urllib.error.HTTPError) as denied:
                urllib.request.urlopen(request, timeout=30)

        assert 404 == status and "error" in body
        assert 405 == denied.value.code and "DELETE" in json.loads(denied.value.read())["error"]

    def test_assets_are_immutable_and_the_page_revalidates(self) -> None:
        """Hashed static files are cached for a year; the page answers 304 to its ETag."""
        with Collector() as server:
            with urllib.request.urlopen(f"{server.url}/", timeout=30) as reply:
                page, tag = reply.read(), reply.headers["etag"]
            src = page.split(b'src="/static/uplot-')[1].split(b'"')[0].decode()
            with urllib.request.urlopen(f"{server.url}/static/uplot-{src}", timeout=30) as reply:
                cache = reply.headers["cache-control"]
            request = urllib.request.Request(f"{server.url}/", headers={"If-None-Match": tag})
            with pytest.raises(urllib.error.HTTPError) as revalidated:
                urllib.request.urlopen(request, timeout=30)

        assert "immutable" in cache and "max-age=31536000" in cache
        assert 304 == revalidated.value.code


class TestIndex:
    def test_index_is_kept_and_never_written_into_the_run(self, run: Path, tmp_path: Path) -> None:
        """A second server reads the kept index (same counts), and the run directory is unchanged."""
        (run / "metrics.csv").write_text("step,loss\n" + "".join(f"{s},{s}\n" for s in range(100)))
        before = sorted(p.name for p in run.iterdir())
        index_dir = tmp_path / "index"
        for _ in range(2):
            with Collector(run_dirs=[str(run)], index_dir=index_dir) as server:
                wait_until(lambda: indexed(server, f"dir:{run.name}", 100), timeout_s=60)
                counts = runs_of(server)[f"dir:{run.name}"]["metrics"]

        assert ({"loss": 100}, before) == (counts, sorted(p.name for p in run.iterdir()))
        assert 1 == len(list((index_dir / "dirs").iterdir()))

    def test_a_removed_run_leaves_the_table(self, tmp_path: Path) -> None:
        """A run directory deleted while serving disappears from the runs; the others stay."""
        import shutil

        keep = RunContext(project="p", driver="d", slug="keep", root=tmp_path)
        gone = RunContext(project="p", driver="d", slug="gone", root=tmp_path)
        keep.close()
        gone.close()
        with Collector(run_dirs=[str(tmp_path)]) as server:
            wait_until(lambda: len(runs_of(server)) == 2, timeout_s=60)
            shutil.rmtree(gone.dir)
            wait_until(lambda: len(runs_of(server)) == 1, timeout_s=60)

            assert [f"dir:{keep.dir.name}"] == list(runs_of(server))

    def test_unwritable_index_dir_falls_back_to_a_temporary_one(
        self, run: Path, tmp_path: Path
    ) -> None:
        """An index directory that cannot be created is reported once; a temporary one is used."""
        blocker = tmp_path / "file"
        blocker.write_text("not a directory")
        append_metric(run, "loss", 1.0, 0)
        script = (
            "import sys, time\nfrom goggles_io.server.collector import Collector\n"
            "with Collector(run_dirs=[sys.argv[1]], index_dir=sys.argv[2]) as c:\n"
            "    c._ui.state.catalog.turn()\n"
            "    print(c._ui.state.catalog.index_root)\n"
        )
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run([sys.executable, "-c", script, str(run), str(blocker / "index")],
                              capture_output=True, text=True, timeout=120, env=env)  # fmt: skip

        assert 0 == done.returncode, done.stderr
        assert "cannot write the index" in done.stderr and "telemetry-ui-index-" in done.stdout
        assert not Path(done.stdout.strip()).exists()  # removed at close


class TestUplotPin:
    def test_an_altered_uplot_fails_with_what_to_install(self, tmp_path: Path) -> None:
        """A youplot whose uPlot file is not the pinned one stops the app with a clear message."""
        fake = tmp_path / "youplot"
        (fake / "vendor").mkdir(parents=True)
        (fake / "__init__.py").write_text("")
        (fake / "vendor" / "uplot.iife.min.js").write_text("/* not uPlot */")
        script = "from goggles_io.server.ui._assets import load_assets\nload_assets()\n"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120, env=env)  # fmt: skip

        assert 1 == done.returncode
        assert "ImportError" in done.stderr and "install exactly youplot==1.0.0" in done.stderr


class TestLostEvents:
    def test_a_run_that_lost_events_is_not_listed_as_a_plain_done(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A sink that hung at finish: the runs list says ``done (lost N)`` and gives ``lost``."""
        import threading

        import goggles_io as gg
        from goggles_io.testing import MemoryHandler

        class Hung(MemoryHandler):
            def handle(self, event: Any) -> None:
                if len(self.events) >= 3:
                    gate.wait(60)
                super().handle(event)

        gate = threading.Event()
        monkeypatch.setenv("GOGGLES_FINISH_STALL", "0.3")
        try:
            with RunContext(project="p", driver="d", slug="lost", root=tmp_path) as context:
                gg.attach(Hung(name="hung"))
                log = gg.get_logger("t", with_metrics=True)
                for step in range(10):
                    log.scalar("loss", 0.5, step=step)
                gg.finish()
        finally:
            gate.set()
        with Collector(run_dirs=[str(tmp_path)]) as server:
            key = f"dir:{context.dir.name}"
            wait_until(lambda: key in runs_of(server), timeout_s=60)
            row = runs_of(server)[key]

        assert ("done (lost 7)", 7) == (row["status"], row["lost"])
