"""``process_gone``: how the collector tells that a run's sending process died on its machine."""

from __future__ import annotations

import os
import subprocess
import sys

from goggles_io._util.liveness import process_gone, process_identity


class TestProcessGone:
    def test_this_process_is_not_gone(self) -> None:
        """A live process with its own start time is alive."""
        assert not process_gone(process_identity())

    def test_an_exited_child_is_gone(self) -> None:
        """A pid whose process exited is gone (a real child, reaped)."""
        child = subprocess.Popen([sys.executable, "-c", "import os; print(os.getpid())"],
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        pid = int(child.communicate(timeout=60)[0])
        assert process_gone({**process_identity(), "pid": pid})

    def test_a_reused_pid_is_gone(self) -> None:
        """The same pid with another start time is another process: the sender is gone."""
        assert process_gone({**process_identity(), "start": "1"})

    def test_another_machine_or_a_bad_identity_is_never_gone(self) -> None:
        """Pids of another kernel or pid namespace, or malformed identities, are not judged."""
        other = {**process_identity(), "machine": "another-boot/pid:[1]", "pid": 2**30}
        assert not process_gone(other)
        for bad in (None, [], {"pid": "12"}, {"pid": True}, {"pid": -1}, {"pid": os.getpid()}):
            assert not process_gone(bad)
