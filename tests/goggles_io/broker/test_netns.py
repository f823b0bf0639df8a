"""Across machines, for real: Redis, two producer machines and the experiment each in a network
namespace of their own, joined by veth pairs, using only the addresses inside them (issue 41).

Topology: a star around Redis. Each other namespace has one veth pair to Redis's namespace
(``10.123.<k>.2`` on its side, ``10.123.<k>.1`` on Redis's) and reaches Redis only there.
Each producer machine runs its own dedicated host (spawned inside its namespace) whose
``BrokerForwarder`` sends to Redis; the experiment reads with a ``from_broker`` handler. Mid-run:
a 10 s partition (both ends of a link down), a slow link (a token-bucket filter), and, where the
kernel has netem, a lossy, delayed one. Per producer: every event handled exactly once, in the
order it was logged, nothing lost. Namespaces and processes go in a ``finally``. Needs root, Debian's
``iproute2`` and ``redis-server``; where the kernel refuses something, the test says what in
its skip line.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support import start, stop, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ip") is None, reason="iproute2's ip is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
]

SCRIPTS = Path(__file__).parent / "scripts"
_SRC = Path(__file__).parents[3] / "src"
_TESTS = Path(__file__).parents[2]
_PORT = 6379
_N = 30_000  # events per producer, at _RATE a second
_RATE = 1000
_MACHINES = ("m0", "m1", "exp")  # each linked to Redis's namespace; link k is 10.123.k.0/30


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class Network:
    """The namespaces, their links, Redis and the processes started in them."""

    def __init__(self, root: Path) -> None:
        tag = f"gg{os.getpid()}-{secrets.token_hex(2)}"
        self.root = root
        self.ns = {name: f"{tag}-{name}" for name in ("redis", *_MACHINES)}
        self.password = secrets.token_hex(8)
        self.procs: list[subprocess.Popen[str]] = []
        self.made: list[str] = []

    # -- the network ------------------------------------------------------------------------
    def build(self) -> None:
        """Namespaces, loopbacks, one veth pair per machine; raises with what ``ip`` refused."""
        for ns in self.ns.values():
            _ip("netns", "add", ns)
            self.made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
        hub = self.ns["redis"]
        for k, machine in enumerate(_MACHINES):
            ns = self.ns[machine]
            # Made in the two namespaces directly: no name is ever taken in the root's.
            _ip(
                "link",
                "add",
                f"r{k}",
                "netns",
                hub,
                "type",
                "veth",
                "peer",
                "name",
                "up0",
                "netns",
                ns,
            )
            _ip("-n", hub, "addr", "add", f"10.123.{k}.1/30", "dev", f"r{k}")
            _ip("-n", ns, "addr", "add", f"10.123.{k}.2/30", "dev", "up0")
            _ip("-n", hub, "link", "set", f"r{k}", "up")
            _ip("-n", ns, "link", "set", "up0", "up")

    def link(self, machine: str, up: bool) -> None:
        """Set both ends of ``machine``'s link up or down (a partition)."""
        k = _MACHINES.index(machine)
        state = "up" if up else "down"
        _ip("-n", self.ns["redis"], "link", "set", f"r{k}", state)
        _ip("-n", self.ns[machine], "link", "set", "up0", state)

    def shape(self, machine: str, *qdisc: str) -> str | None:
        """Put ``qdisc`` on both ends of ``machine``'s link; what tc refused, or ``None``."""
        k = _MACHINES.index(machine)
        for ns, dev in ((self.ns["redis"], f"r{k}"), (self.ns[machine], "up0")):
            done = subprocess.run(
                ["ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", *qdisc],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                return f"tc qdisc ... {' '.join(qdisc)}: {done.stderr.strip()}"
        return None

    def unshape(self, machine: str) -> None:
        k = _MACHINES.index(machine)
        for ns, dev in ((self.ns["redis"], f"r{k}"), (self.ns[machine], "up0")):
            subprocess.run(
                ["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root"],
                capture_output=True,
            )

    # -- processes --------------------------------------------------------------------------
    def url(self, machine: str) -> str:
        """Redis as ``machine`` reaches it: the address at the other end of its own link."""
        return f"redis://:{self.password}@10.123.{_MACHINES.index(machine)}.1:{_PORT}/0"

    def start_redis(self) -> None:
        binds = [f"10.123.{k}.1" for k in range(len(_MACHINES))]
        argv = ["redis-server", "--port", str(_PORT), "--bind", *binds, "--save", ""]
        argv += ["--appendonly", "no", "--dir", str(self.root), "--requirepass", self.password]
        self.procs.append(
            start(
                ["ip", "netns", "exec", self.ns["redis"], *argv],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        )
        probe = ["import redis,sys", "redis.Redis.from_url(sys.argv[1]).ping()"]
        for machine in _MACHINES:
            wait_until(
                lambda m=machine: self._run_in(
                    m, [sys.executable, "-c", ";".join(probe), self.url(m)]
                ),
                timeout_s=30,
                what=f"Redis answers {machine} on its link",
            )

    def _run_in(self, machine: str, argv: list[str]) -> bool:
        done = subprocess.run(
            ["ip", "netns", "exec", self.ns[machine], *argv], capture_output=True, timeout=30
        )
        return done.returncode == 0

    def run(self, machine: str, script: str, *args: object, **env: str) -> subprocess.Popen[str]:
        """A script on ``machine``: its own socket (its own host), Redis at its link's address."""
        home = self.root / machine
        home.mkdir(exist_ok=True, mode=0o700)
        full_env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")},
            "GOGGLES_TRANSPORT": "socket",
            "GOGGLES_SOCKET": str(home / "bus.sock"),
            "GOGGLES_HOST_IDLE_TIMEOUT": "0.5",
            "GOGGLES_HOST_LOG": str(home / "host.log"),
            "GOGGLES_BROKER": self.url(machine),
            "GOGGLES_BROKER_RUN": "netns",
            "GOGGLES_SPOOL_DIR": str(home / "spool"),
            "PYTHONPATH": os.pathsep.join([str(SCRIPTS), str(_SRC), str(_TESTS)]),
            **env,
        }
        proc = start(
            ["ip", "netns", "exec", self.ns[machine], sys.executable, str(SCRIPTS / script)]
            + [str(a) for a in args],
            cwd=SCRIPTS,
            env=full_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def close(self) -> None:
        """Stop every process, then remove the namespaces (their veth pairs go with them)."""
        for proc in reversed(self.procs):
            stop(proc)
        for ns in self.made:
            for pid in _ip("netns", "pids", ns, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)  # a host a producer spawned in it, if still there
            _ip("netns", "del", ns, check=False)


@pytest.fixture
def network() -> Iterator[Network]:
    root = Path(tempfile.mkdtemp(prefix="ggn-"))
    net = Network(root)
    try:
        try:
            net.build()
        except subprocess.CalledProcessError as exc:
            pytest.skip(
                f"the kernel refused a network namespace or veth pair: {exc.stderr.strip()}"
            )
        if shutil.which("redis-server") is None:
            pytest.skip("redis-server is not installed (.ci/run installs Debian's redis-server)")
        net.start_redis()
        yield net
    finally:
        net.close()
        shutil.rmtree(root, ignore_errors=True)


def _rows(path: Path) -> list[list[Any]]:
    if not path.exists():
        return []
    whole = path.read_text().split("\n")[:-1]
    return [json.loads(line) for line in whole if line]


def _report(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err}"
    return {**json.loads(out.strip().splitlines()[-1]), "stderr": err}


class _Run:
    """Two producers at a steady rate and the experiment's consumer, across the namespaces."""

    def __init__(self, net: Network, out: Path) -> None:
        self.out = out
        self.consumer = net.run(
            "exp", "broker_consumer.py", out, 2 * (_N + 1), CONSUMER_DEADLINE_S="200"
        )
        assert "ready\n" == self.consumer.stdout.readline()  # type: ignore[union-attr]
        self.producers = [net.run(m, "broker_producer.py", m, _N, _RATE) for m in ("m0", "m1")]
        for proc in self.producers:
            assert "ready\n" == proc.stdout.readline()  # type: ignore[union-attr]

    def handled(self) -> Counter[str]:
        return Counter(row[0] for row in _rows(self.out) if row[0] != "warm")

    def flowing(self, more: int = 2000) -> None:
        """Wait until both producers' events arrive, ``more`` each past what had."""
        base = self.handled()
        wait_until(
            lambda: min((self.handled() - base)[m] for m in ("m0", "m1")) >= more,
            timeout_s=90,
            what="both producers' events flowing to the experiment",
        )

    def check(self) -> dict[str, Any]:
        reports = [_report(proc) for proc in self.producers]
        consumer = _report(self.consumer)
        rows = _rows(self.out)
        for machine, report in zip(("m0", "m1"), reports, strict=True):
            steps = [row[1] for row in rows if row[0] == machine]
            repeats = [s for s, k in Counter(steps).items() if k > 1]
            assert [] == repeats, f"{machine} handled twice: {repeats[:10]}"
            assert steps == sorted(steps), f"{machine} out of order"
            assert list(range(_N)) == steps, (machine, len(steps), report)
            assert 0 == report["dropped"] + report["lost"], (machine, report)
        return consumer


def test_a_10_s_partition_loses_and_repeats_nothing(network: Network, tmp_path: Path) -> None:
    """Mid-run, producer m0 and the experiment lose their links to Redis for 10 s (m1 goes on):
    afterwards every event of each producer is handled exactly once, in order."""
    run = _Run(network, tmp_path / "handled.jsonl")
    run.flowing()
    network.link("m0", up=False)
    network.link("exp", up=False)
    try:
        time.sleep(10.0)  # the partition itself, not a wait for a condition
    finally:
        network.link("m0", up=True)
        network.link("exp", up=True)
    healed = time.monotonic()
    run.flowing(500)
    caught_up = time.monotonic() - healed
    got = run.check()

    assert 2 * (_N + 1) == got["count"], got
    print(f"\npartition: flowing again {caught_up:.1f} s after the links came back; {got}")


def test_a_slow_link_loses_and_repeats_nothing(network: Network, tmp_path: Path) -> None:
    """Mid-run, m0's link drops to 256 kbit/s for 10 s (a token-bucket filter: the producer's
    ~30 KB/s of entries queue in its forwarder), then recovers."""
    run = _Run(network, tmp_path / "handled.jsonl")
    run.flowing()
    refused = network.shape("m0", "tbf", "rate", "256kbit", "burst", "16kb", "latency", "2s")
    if refused:
        pytest.skip(f"the kernel refused a token-bucket qdisc: {refused}")
    try:
        time.sleep(10.0)  # the slow spell itself
    finally:
        network.unshape("m0")
    run.flowing(500)
    got = run.check()

    assert 2 * (_N + 1) == got["count"], got


def test_a_lossy_slow_link_loses_and_repeats_nothing(network: Network, tmp_path: Path) -> None:
    """Where the kernel offers netem: m0's and the experiment's links delay packets 100 ms
    (+-50 ms) and lose 10% of them for 10 s mid-run."""
    refused = network.shape("m1", "netem", "delay", "1ms")
    network.unshape("m1")
    if refused:
        pytest.skip(f"the kernel refused netem (no lossy link tested): {refused}")
    run = _Run(network, tmp_path / "handled.jsonl")
    run.flowing()
    lossy = ("netem", "delay", "100ms", "50ms", "loss", "10%")
    for machine in ("m0", "exp"):
        refused = network.shape(machine, *lossy)
        assert refused is None, refused
    try:
        time.sleep(10.0)  # the lossy spell itself
    finally:
        network.unshape("m0")
        network.unshape("exp")
    run.flowing(500)
    got = run.check()

    assert 2 * (_N + 1) == got["count"], got
