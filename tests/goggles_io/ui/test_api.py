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

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("uvicorn")

from goggles_io.server.collector import Collector
from goggles_io.server.ui._downsample import downsample, window

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


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GOGGLES_TRANSPORT": "inprocess"}
    done = subprocess.run([sys.executable, "-c", LOCAL_RUN, str(root)], capture_output=True,
                          text=True, timeout=120, env=env, check=True)  # fmt: skip
    return Path(done.stdout.strip().splitlines()[-1])


class TestRunsAndCharts:
    def test_local_storage_run_listed_with_metrics_and_media(self, local_run: Path) -> None:
        """A LocalStorageHandler run is listed as done, with its metrics and its image."""
        with Collector(run_dirs=[str(local_run.parent)]) as server:
            _, reply = get(f"{server.url}/api/runs")
            (run,) = reply["runs"]
            _, media = get(f"{server.url}/api/media?run={run['key']}")

        assert ("done", {"loss": 5, "angle": 5}) == (run["status"], run["metrics"])
        assert [("camera", 2)] == [(m["name"], m["step"]) for m in media["media"]]

    def test_custom_axis_and_image_bytes(self, local_run: Path) -> None:
        """The custom axis gives the logged x values; the image file is served as a PNG."""
        with Collector(run_dirs=[str(local_run)]) as server:
            key = f"dir:{local_run.name}"
            _, charts = get(f"{server.url}/api/charts?run={key}&axis=custom")
            _, media = get(f"{server.url}/api/media?run={key}")
            status, png = get(server.url + media["media"][0]["url"])

        angle = charts["charts"]["angle"][key]
        assert ([0.0, 0.5, 1.0, 1.5, 2.0], "sim_time") == (angle["x"], angle["x_axis"])
        assert (200, b"\x89PNG") == (status, png[:4])

    @pytest.mark.parametrize("path", ["../run.kv", "/etc/passwd", "images/../../x", "run.kv/.."])
    def test_media_path_cannot_escape_the_run(self, local_run: Path, path: str) -> None:
        """A media path leaving the run directory is a 404, never the file."""
        (local_run.parent / "x").write_text("secret")
        with Collector(run_dirs=[str(local_run)]) as server:
            query = urllib.parse.urlencode({"run": f"dir:{local_run.name}", "path": path})
            status, body = get(f"{server.url}/api/media/file?{query}")

        assert 404 == status and "error" in body

    def test_collector_points_are_charted_and_stale_run_crashed(self) -> None:
        """Points posted over the protocol are charted; a silent run shows as crashed."""
        with Collector() as server:
            server.store.register({"run_id": "r1", "heartbeat_s": 0.05})
            server.store.add_points("r1", {"points": [{"seq": i, "name": "loss", "value": i * 1.0,
                                                  "step": i} for i in range(1, 4)]})  # fmt: skip
            from support import wait_until

            wait_until(lambda: get(f"{server.url}/api/runs")[1]["runs"][0]["status"] == "crashed")
            _, charts = get(f"{server.url}/api/charts?run=db:r1")

        assert [1.0, 2.0, 3.0] == charts["charts"]["loss"]["db:r1"]["y"]


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

    def test_markup_in_names_is_data_not_markup(self, tmp_path: Path) -> None:
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


class TestDownsample:
    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=3000), st.integers(16, 400))
    def test_keeps_extremes_and_ends(self, values: list[float], n: int) -> None:
        """The thinned series keeps the min, the max, the first and last point, in x order."""
        x = np.arange(len(values), dtype=float)
        y = np.array(values)
        tx, ty = downsample(*window(x, y, None, None), n)

        assert ty.min() == y.min() and ty.max() == y.max()
        assert (tx[0], tx[-1]) == (x[0], x[-1]) and np.all(np.diff(tx) > 0)
        assert len(tx) <= max(n + 4, len(values) if len(values) <= n else 0) or len(tx) <= n + 4

    def test_zoomed_window_is_full_resolution(self) -> None:
        """A window holding fewer points than asked is sent whole."""
        x = np.arange(1_000_000, dtype=float)
        tx, _ = downsample(*window(x, np.sin(x), 1000.0, 1200.0), 1000)

        assert 203 == len(tx)  # 201 inside, plus one either side to reach the edges
