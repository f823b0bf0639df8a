"""``push``/``scalar`` never depend on the sender thread's background import of numpy."""

from __future__ import annotations

from pathlib import Path

_STEPS = 2000


def test_push_in_a_fresh_script_without_numpy_works_every_time(bus, finished) -> None:
    """5 fresh processes push plain floats while the sender imports numpy: 5/5 exit 0, all arrive.

    The caller's check used to read the half-imported module (``AttributeError: partially
    initialized module 'numpy'``) in about one run in three.
    """
    for i in range(5):
        run = Path(bus.root) / f"run{i}"
        out, err = finished(bus.run("push_cold.py", run, _STEPS), timeout_s=120)

        assert "numpy before: False" in out
        assert "ok False" in out, err
        assert "Traceback" not in err
        assert _STEPS == len((run / "log.jsonl").read_text().splitlines())
