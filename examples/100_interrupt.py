"""Graceful shutdown (README "Graceful shutdown utils"): Ctrl-C ends the loop cleanly.

The first SIGINT/SIGTERM only sets a flag; the loop finishes its step, logs, and leaves.
A second Ctrl-C raises KeyboardInterrupt, for a loop that is stuck.

Usage:
    python examples/100_interrupt.py                  # press Ctrl-C, or wait for 50 steps
    python examples/100_interrupt.py --self-signal    # sends itself SIGINT at step 10
"""

from __future__ import annotations

import argparse
import os
import signal
import time

import goggles_io as gg

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=50, help="steps to run when not interrupted")
parser.add_argument("--self-signal", action="store_true", help="send SIGINT to itself at step 10")
args = parser.parse_args()

gg.attach(gg.ConsoleHandler(name="examples.interrupt.console", level=gg.INFO), scopes=["global"])
logger = gg.get_logger("examples.interrupt", with_metrics=True)

step = 0
with gg.GracefulShutdown() as shutdown:
    logger.info("training for %d steps; press Ctrl-C to stop early", args.steps)
    while step < args.steps and not shutdown.requested:
        logger.scalar("loss", 1.0 / (step + 1), step=step)
        if args.self_signal and step == 10:
            os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does
        time.sleep(0.05)  # stands in for one training step
        step += 1

if shutdown.requested:
    assert shutdown.signal is not None
    logger.warning("%s received: stopped cleanly after %d steps", shutdown.signal.name, step)
else:
    logger.info("finished all %d steps", step)
gg.finish()
