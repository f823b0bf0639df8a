"""finish(wait_for_host=False): the client hands its events to the dedicated host and leaves."""

from __future__ import annotations

import pytest

from support import wait_until


@pytest.mark.slow
class TestFinishWithoutWaiting:
    def test_returns_before_the_host_wrote_and_the_host_writes_everything(
        self, bus, finished
    ) -> None:
        """finish(wait_for_host=False) returns with lines still to write; the host writes all."""
        out, _ = finished(bus.run("release.py", 20, 0.1, bus.jsonl))
        fields = out.split()

        assert ("written", "False") == (fields[2], fields[5])
        assert int(fields[3]) < 20  # the slow sink needs 2 s; the hand-over does not wait
        wait_until(lambda: len(bus.lines()) == 20, timeout_s=60, what="host wrote every event")
