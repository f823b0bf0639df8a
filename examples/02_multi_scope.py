"""Multi-scope logging: handlers on different scopes, hierarchical dot scopes."""

from __future__ import annotations

import goggles_io as gg

# Handler names are bus-wide identities: define them once.
HANDLER1_NAME = "examples.multi_scope.console.1"
HANDLER2_NAME = "examples.multi_scope.console.2"

handler1 = gg.ConsoleHandler(name=HANDLER1_NAME, level=gg.INFO)
gg.attach(handler1, scopes=["global", "scope1"])

handler2 = gg.ConsoleHandler(name=HANDLER2_NAME, level=gg.INFO)
gg.attach(handler2, scopes=["global", "scope2"])

logger_scope1 = gg.get_logger("examples.basic.scope1", scope="scope1")
logger_scope2 = gg.get_logger("examples.basic.scope2")
# bind returns a new logger; assign it for the new scope to take effect.
logger_scope2 = logger_scope2.bind(scope="scope2")
logger_global = gg.get_logger("examples.basic.global", scope="global")

logger_scope1.info(f"This will be logged only by {handler1.name}")
logger_scope2.info(f"This will be logged only by {handler2.name}")
logger_global.info("This will be logged by both handlers.")

# Scopes are hierarchical: global.namespace also reaches handlers on global.
logger_namespace = gg.get_logger("examples.basic.namespace", scope="global.namespace")
logger_namespace.info("This will be logged by both handlers.")

gg.finish()
