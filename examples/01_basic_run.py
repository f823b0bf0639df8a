"""Basic usage: a console handler and a text logger (README "Basic usage")."""

from __future__ import annotations

import goggles_io as gg

CONSOLE_HANDLER_NAME = "examples.basic.console"

logger = gg.get_logger("examples.basic")
gg.attach(gg.ConsoleHandler(name=CONSOLE_HANDLER_NAME, level=gg.INFO), scopes=["global"])

logger.info("Experiment started")
logger.warning("This is a warning")
logger.error("An error occurred")
logger.debug("you won't see this at INFO")

# Bound fields travel with every event of the new logger; the receiver is unchanged.
run_logger = logger.bind(run="run_1")
run_logger.info("step %d of %d", 1, 10)

# Logging is asynchronous by default: finish() delivers everything and closes the handlers.
gg.finish()
