"""A custom handler: subclass, register (so it can be rebuilt from its spec), attach."""

from __future__ import annotations

import goggles_io as gg


class CustomConsoleHandler(gg.ConsoleHandler):
    """A console handler that adds a prefix to each log message."""

    def handle(self, event: gg.Event) -> None:
        data = event.to_dict()
        data["payload"] = f"[CUSTOM PREFIX] {data['payload']}"
        super().handle(gg.Event.from_dict(data))


# Register the custom handler so it can be serialized/deserialized (e.g. rebuilt in a host).
gg.register_handler(CustomConsoleHandler)

logger = gg.get_logger("examples.custom_handler")
gg.attach(
    CustomConsoleHandler(name="examples.custom.console", level=gg.INFO),
    scopes=["global"],
)
# Because the handler's level is INFO, the debug message will not be shown.
logger.info("Hello, world!")
logger.debug("you won't see this at INFO")

gg.finish()
