"""The election's fork hooks when the election module is imported in the middle of a fork.

The pipe's worker imports ``goggles_io._transport.client.election`` lazily; an import that lands while
another thread forks registers the module's hooks after that fork's ``before`` hooks ran. The
``after`` hooks must then leave a hold they did not take alone in the parent (it belongs to the
worker, probing in ``elect``) and give the child a free lock. The fork runs in a fresh process
so this suite's own import of the module does not hide the case.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, sys

    held = {}

    def import_and_hold():
        # Runs among the fork's before hooks: registers the election's hooks too late for
        # their own before, and takes the lock as a probing worker would.
        import goggles_io._transport.client.election as election
        election._PROBING.acquire()
        held["module"] = election

    os.register_at_fork(before=import_and_hold)
    pid = os.fork()
    election = held["module"]
    if pid == 0:
        os._exit(0 if not election._PROBING.locked() else 3)
    _, status = os.waitpid(pid, 0)
    still_held = election._PROBING.locked()
    election._PROBING.release()  # the worker's own release: must not raise
    print("child", os.waitstatus_to_exitcode(status), "parent_still_held", still_held)
    """
)


def test_hooks_registered_mid_fork_release_only_what_they_took() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["child", "0", "parent_still_held", "True"], done.stderr
    assert "unlocked lock" not in done.stderr
