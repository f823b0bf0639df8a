"""Hostile run folders: huge lines, symlinks out, FIFOs, scripts in a run's files, any script in
a download's name. The dashboard stays small, serves nothing outside its root, runs nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

from browser import browser_marks, chromium, wait
from goggles_io.runs import RunContext, open_run
from goggles_io.server.collector import Collector
from support import wait_until

GB = 1 << 30
RSS_LIMIT_KB = 100 * 1024
SERVER = (
    "import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "from experiment_telemetry.cli import main\nsys.exit(main(sys.argv[1:]))\n"
)


def _metric(name: str, value: float, step: int) -> bytes:
    line = {"kind": "metric", "step": step, "timestamp": 1.0 + step, "payload": {name: value}}
    return json.dumps(line).encode() + b"\n"


def _run(root: Path, slug: str) -> Path:
    context = RunContext(project="p", driver="tests", slug=slug, root=root)
    context.close()
    return context.dir


def _sparse(path: Path, head: bytes, hole: int, tail: bytes = b"") -> None:
    """``head``, then ``hole`` zero bytes that take no disk (no newline among them), then ``tail``."""
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(len(head) + hole)
        fh.seek(len(head) + hole)
        fh.write(tail)


def hostile_root(tmp_path: Path) -> tuple[Path, dict[str, Path]]:
    """A root with a 2 GB line in ``log.jsonl``, a 2 GB ``metrics.csv`` without a newline, a
    ``log.jsonl`` symlinked out of its run, a run folder symlinked in from outside, and FIFOs."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "log.jsonl").write_bytes(_metric("secret", 42.0, 0))
    (outside / "config.kv").write_text("secret=1\n")
    secret_run = _run(outside, "secret")
    (secret_run / "log.jsonl").write_bytes(_metric("secret", 42.0, 0))
    (secret_run / "alerts.jsonl").write_text('{"metric": "secret"}\n')
    runs = {
        "long": _run(root, "long-line"),
        "csv": _run(root, "csv-no-newline"),
        "link": _run(root, "linked-log"),
        "fifo": _run(root, "fifo"),
    }
    _sparse(
        runs["long"] / "log.jsonl", _metric("loss", 1.0, 0), 2 * GB, b"\n" + _metric("loss", 0.5, 1)
    )
    _sparse(runs["csv"] / "metrics.csv", b"step,loss", 2 * GB)
    (runs["link"] / "log.jsonl").symlink_to(outside / "log.jsonl")
    (runs["link"] / "metrics.config.kv").symlink_to(outside / "config.kv")
    (root / "linked-run").symlink_to(secret_run)
    (runs["fifo"] / "metrics.csv").write_text("step,loss\n0,1.0\n")
    for name in ("log.jsonl", "alerts.jsonl", "stats.jsonl", "config.kv", "heartbeat"):
        (runs["fifo"] / name).unlink(missing_ok=True)
        os.mkfifo(runs["fifo"] / name)
    return root, {**runs, "secret": secret_run}


def get(url: str) -> tuple[int, Any, dict[str, str]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as reply:
            body, headers = reply.read(), dict(reply.headers.items())
            status = reply.status
    except urllib.error.HTTPError as exc:
        body, headers, status = exc.read(), dict(exc.headers.items()), exc.code
    kind = headers.get("content-type", "")
    return status, json.loads(body) if "json" in kind else body, headers


def vm_kb(pid: int, field: str) -> int:
    """``VmHWM`` (peak) or ``VmRSS`` of process ``pid``, in kB (``/proc/<pid>/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


@pytest.fixture
def ui_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, dict[str, Path]]]:
    """``telemetry ui`` over the hostile root, in its own process (its memory measured alone)."""
    root, runs = hostile_root(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, "ui", str(root), "--port", "0",
         "--index-dir", str(tmp_path / "index")],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )  # fmt: skip
    try:
        url = proc.stdout.readline().split()[3].rstrip("/")  # type: ignore[union-attr]
        yield proc, url, runs
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            proc.kill()
            proc.wait(30)


class TestHostileFolders:
    def test_server_stays_small_and_serves_nothing_outside_the_root(
        self, ui_server: tuple[subprocess.Popen[str], str, dict[str, Path]]
    ) -> None:
        """4 GB without a newline, symlinks out and FIFOs: the server's peak RSS stays under
        100 MB, the long lines are counted, and nothing outside the root is served."""
        proc, url, runs = ui_server

        def rows() -> dict[str, dict[str, Any]]:
            return {r["key"]: r for r in get(f"{url}/api/runs")[1]["runs"]}

        def settled() -> bool:
            got = rows()
            return (
                got["dir:" + runs["long"].name]["metrics"].get("loss") == 2
                and got["dir:" + runs["csv"].name]["indexed"] == 1.0
                and got["dir:" + runs["fifo"].name]["metrics"].get("loss") == 1
            )

        wait_until(settled, timeout_s=240, interval_s=0.5)
        peak_kb = vm_kb(proc.pid, "VmHWM")
        got = rows()
        long_row, csv_row = got["dir:" + runs["long"].name], got["dir:" + runs["csv"].name]
        link_key, out_key = "dir:" + runs["link"].name, "dir:linked-run"
        answers = {
            "series": get(f"{url}/api/series?run={link_key}&metric=secret")[1]["series"],
            "log via media": get(f"{url}/api/media/file?run={link_key}&path=log.jsonl")[0],
            "run out: stats": get(f"{url}/api/stats?run={out_key}")[0],
            "run out: file": get(f"{url}/api/media/file?run={out_key}&path=log.jsonl")[0],
            "run out: alerts": get(f"{url}/api/alerts?run={out_key}")[1]["alerts"],
            "fifo stats": get(f"{url}/api/stats?run=dir:{runs['fifo'].name}")[0],
        }

        assert peak_kb <= RSS_LIMIT_KB, f"server peak RSS {peak_kb} kB"
        assert (1, 1, 1.0) == (long_row["unreadable"], csv_row["unreadable"], long_row["indexed"])
        assert out_key not in got and {} == got[link_key]["metrics"]
        assert "outside" in got[link_key]["note"] and "secret" not in got[link_key]["config"]
        assert {"series": {}, "log via media": 404, "run out: stats": 404, "run out: file": 404,
                "run out: alerts": [], "fifo stats": 200} == answers  # fmt: skip

    def test_notebook_reader_is_bounded_and_confined(self, tmp_path: Path) -> None:
        """``open_run`` over the same folders: the long line skipped and counted, the symlinked
        log and the FIFOs never read (a subprocess, so its peak memory is its own)."""
        _, runs = hostile_root(tmp_path)
        script = (
            "import json, sys\nfrom goggles_io.runs import open_run\nout = {}\n"
            "for path in sys.argv[1:]:\n    run = open_run(path)\n"
            "    out[path] = [run.metrics, len(run.history()['step']), run._parsed.skipped,"
            " run.alerts, 'secret' in run.config]\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
            "print(json.dumps({'runs': out, 'hwm': int(hwm)}))\n"
        )
        paths = [str(runs[k]) for k in ("long", "csv", "link", "fifo")]
        done = subprocess.run(
            [sys.executable, "-c", script, *paths], capture_output=True, text=True, timeout=240,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, check=True,
        )  # fmt: skip
        got = json.loads(done.stdout)

        assert got["hwm"] <= RSS_LIMIT_KB, f"open_run peak RSS {got['hwm']} kB"
        assert [
            [["loss"], 2, 1, [], False], [[], 0, 1, [], False], [[], 0, 0, [], False],
            [["loss"], 1, 0, [], False],
        ] == [got["runs"][p] for p in paths]  # fmt: skip
        assert ["secret"] == open_run(runs["secret"]).metrics  # a folder pointed at is read


HTML_REPORT = (
    "<html><head><title>report</title></head><body>report"
    "<script>document.title = 'pwned'; fetch('{probe}/html')</script></body></html>"
)
SVG_IMAGE = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40" onload="fetch(\'{probe}/svg\')">'
    '<rect width="40" height="40" fill="red"/><script>document.title = "pwned"</script></svg>'
)
ARTIFACT_RUN = """
import sys
import goggles_io as gg
from goggles_io.handlers.storage import LocalStorageHandler
from goggles_io.runs import RunContext
run = RunContext(project="p", driver="d", slug="scripts", root=sys.argv[1])
gg.attach(LocalStorageHandler(run.dir, name="t.local"))
log = gg.get_logger("t", with_metrics=True)
log.artifact(sys.argv[2], name="report", format="html", step=0)
log.artifact(sys.argv[3], name="drawing", format="svg", step=0)
log.scalar("loss", 1.0, step=0)
gg.finish()
run.close()
print(run.dir)
"""


class _Probe(BaseHTTPRequestHandler):
    """Records every path asked for: a script that ran would call here."""

    hits: list[str] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b"<html><body><script>fetch('/control-ran')</script>control</body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("access-control-allow-origin", "*")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def probe() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 that records the paths it was asked for."""
    hits: list[str] = []
    handler = type("Probe", (_Probe,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def script_run(root: Path, probe_url: str) -> Path:
    """A run that logged an HTML report and an SVG (as an artifact and as an image), each with
    a script that would set the title and call ``probe_url``."""
    html, svg = HTML_REPORT.format(probe=probe_url), SVG_IMAGE.format(probe=probe_url)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GOGGLES_TRANSPORT": "inprocess"}
    done = subprocess.run([sys.executable, "-c", ARTIFACT_RUN, str(root), html, svg],
                          capture_output=True, text=True, timeout=120, env=env, check=True)  # fmt: skip
    run = Path(done.stdout.strip().splitlines()[-1])
    (run / "images").mkdir(exist_ok=True)
    (run / "images" / "drawing_0.svg").write_text(svg)
    line = {"kind": "image", "step": 0, "payload": "images/drawing_0.svg", "extra.name": "drawing"}
    with open(run / "log.jsonl", "a") as fh:
        fh.write(json.dumps(line) + "\n")
    return run


def _file_urls(server: Collector, key: str) -> dict[str, str]:
    _, media, _ = get(f"{server.url}/api/media?run={urllib.parse.quote(key)}")
    return {m["file"]: server.url + m["url"] for m in media["media"]}


class TestRunFilesRunNothing:
    def test_active_files_are_sandboxed_downloads_and_images_stay_inline(
        self, tmp_path: Path, probe: tuple[str, list[str]]
    ) -> None:
        """HTML and SVG go out as sandboxed downloads; a PNG-like passive type inline, sandboxed."""
        run = script_run(tmp_path / "runs", probe[0])
        (run / "artifacts" / "notes.txt").write_text("<script>alert(1)</script>")
        with Collector(run_dirs=[str(run.parent)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: len(_file_urls(server, key)) == 3, timeout_s=60)
            urls = _file_urls(server, key)
            html = get(urls["artifacts/report_0.html"])[2]
            svg = get(urls["images/drawing_0.svg"])[2]
            text = get(f"{server.url}/api/media/file?run={key}&path=artifacts/notes.txt")[2]

        for headers in (html, svg, text):
            assert headers["content-security-policy"].startswith("sandbox; default-src 'none'")
            assert "nosniff" == headers["x-content-type-options"]
        assert html["content-disposition"].startswith("attachment;")
        assert svg["content-disposition"].startswith("attachment;")
        assert ("text/plain", None) == (
            text["content-type"].split(";")[0],
            text.get("content-disposition"),
        )

    def test_nosniff_on_every_kind_of_answer(self, tmp_path: Path) -> None:
        """The page, assets, the API, a 404, a 405 and the ingest protocol all say nosniff."""
        run = _run(tmp_path / "runs", "plain")
        with Collector(run_dirs=[str(run.parent)]) as server:
            _, page, _ = get(server.url + "/")
            asset = next(p for p in page.decode().split('"') if p.startswith("/static/"))
            answers = [get(server.url + path)[2] for path in
                       ("/", asset, "/api/runs", "/api/nothing", "/runs/unknown/points")]  # fmt: skip
            request = urllib.request.Request(server.url + "/api/runs", method="DELETE")
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=30)

        assert ["nosniff"] * 6 == [
            h.get("x-content-type-options") for h in [*answers, dict(refused.value.headers)]
        ]

    @pytest.mark.parametrize("name", ["דיוק/אימות", "損失/検証 值"], ids=["Hebrew", "CJK"])
    def test_download_names_in_any_script(self, tmp_path: Path, name: str) -> None:
        """A CSV export of a metric named in Hebrew or CJK answers 200, its name intact in
        ``filename*`` (RFC 6266) with an ASCII ``filename`` beside it."""
        run = _run(tmp_path / "runs", "names")
        (run / "log.jsonl").write_bytes(_metric(name, 0.5, 0))
        with Collector(run_dirs=[str(run.parent)]) as server:
            key = f"dir:{run.name}"
            wait_until(lambda: name in _metrics(server, key), timeout_s=60)
            query = urllib.parse.urlencode({"run": key, "metric": name, "format": "csv"})
            status, body, headers = get(f"{server.url}/api/export?{query}")

        disposition = headers["content-disposition"]
        encoded = disposition.split("filename*=UTF-8''", 1)[1]
        fallback = disposition.split('filename="', 1)[1].split('"', 1)[0]
        assert (200, b"step,time,x,value\n0.0,1.0,,0.5\n") == (status, body)
        assert f"{key}_{name}.csv".replace("/", "_").replace(":", "_") == urllib.parse.unquote(
            encoded
        )
        assert fallback.isascii() and fallback.endswith(".csv")


def _metrics(server: Collector, key: str) -> dict[str, int]:
    rows = {r["key"]: r for r in get(f"{server.url}/api/runs")[1]["runs"]}
    return rows[key]["metrics"] if key in rows else {}


class TestRunFilesInTheBrowser:
    pytestmark = browser_marks()

    def test_html_and_svg_with_script_run_nothing(
        self, tmp_path: Path, probe: tuple[str, list[str]]
    ) -> None:
        """Opening the HTML and SVG files' URLs, and the media view showing the SVG as an image,
        run none of their scripts; the image still shows."""
        probe_url, hits = probe
        run = script_run(tmp_path / "runs", probe_url)
        with Collector(run_dirs=[str(run.parent)]) as server, chromium() as driver:
            key = f"dir:{run.name}"
            wait_until(lambda: len(_file_urls(server, key)) == 3, timeout_s=60)
            urls = _file_urls(server, key)
            titles = []
            for file in (
                "artifacts/report_0.html",
                "artifacts/drawing_0.svg",
                "images/drawing_0.svg",
            ):
                driver.get(urls[file])
                titles.append(driver.title)
            driver.get(f"{server.url}/?{urllib.parse.urlencode({'run': key, 'tab': 'media'})}")
            shown = wait(driver, lambda d: d.execute_script(
                "const i = document.querySelector('.media-view[data-kind=image] img.thumb');"
                "return i && i.complete && i.naturalWidth ? i.naturalWidth : 0;"
            ), "the SVG image shows in the media view")  # fmt: skip
            driver.get(probe_url + "/control")  # a page whose script does run: the browser works
            wait_until(lambda: "/control-ran" in hits, timeout_s=60)

        assert "pwned" not in titles
        assert 40 == shown
        assert {"/html", "/svg"}.isdisjoint(hits) and "/control-ran" in hits, hits
