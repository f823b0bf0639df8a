"""Stream metrics to a remote dashboard: a local reference collector stands in for the server.

Run: python examples/10_remote.py   -- in real use, put TELEMETRY_REMOTE_URL and
TELEMETRY_REMOTE_API_KEY in .env and run `telemetry collector` (or your dashboard) elsewhere.
"""

from __future__ import annotations

import tempfile

import goggles_io as gg
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.runs import RunContext, register_run
from goggles_io.server import Collector

API_KEY = "example-key"  # demo only: real keys live in .env, never in code

with Collector(api_key=API_KEY) as collector, tempfile.TemporaryDirectory() as root:
    with RunContext(project="demo", driver=__file__, slug="remote-demo", root=root) as run:
        remote = RemoteHandler(
            name="examples.remote",
            server_url=collector.url,
            api_key=API_KEY,
            run_name=run.name(),
            buffer_size=16,
        )
        # Attach first: register_run and set_config then reach the instance the bus runs
        # (in the dedicated host process by default), not just this local object.
        gg.attach(remote)
        run.set_config({"algorithm": "SAC", "env": "HalfCheetah"})
        register_run(run, remote)  # the run is visible on the dashboard before step 0
        run.set_config("seed", 0)  # recorded after registration: the collector merges it

        logger = gg.get_logger("examples.remote", with_metrics=True)
        for step in range(100):
            logger.scalar("policy_loss", 1.0 / (step + 1), step=step)
        gg.finish()  # flushes, sends the finish, drains the queue, prints the tally

    for info in collector.runs():
        print(
            f"run {info['name']!r} ({info['run_id']}): status={info['status']}, "
            f"{info['points']} points, config={info['config']}"
        )
    last = collector.points(run.id)[-1]
    print(f"last point: {last['name']}={last['value']:.4f} at step {last['step']}")
