"""How a client left the host: said goodbye (``finish``, robo-goggles' ``release``) or died.

A client that sent events and disconnected without a goodbye was killed (SIGKILL, OOM, a crash
past ``atexit``). When the host then closes its handlers for good (its last client is gone), it
first calls each handler's optional ``producer_lost()`` hook, so a sink that reports the run's
end (``RemoteHandler``) tells its collector ``crashed`` instead of a normal finish. A
``finish()`` of the last client clears the mark: the handlers close as a clean end. A forked
child that exits with ``os._exit`` after its parent's last ``finish()`` reads as lost too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from goggles_io._event.codec import Call

__all__ = ["says_goodbye", "tell_producer_lost"]


def says_goodbye(call: Call) -> bool:
    """A ``finish``, or the ``flush`` marked ``leaving`` that ``release`` leaves with."""
    if call.op == "finish":
        return True
    return call.op == "flush" and isinstance(call.args, dict) and call.args.get("leaving") is True


def tell_producer_lost(handlers: Iterable[Any], report_once: Callable[[str, str], Any]) -> None:
    """Call every handler's ``producer_lost()`` (optional hook) before they close; a hook that
    raises is reported once and never keeps the others from hearing it."""
    for handler in handlers:
        hook = getattr(handler, "producer_lost", None)
        if not callable(hook):
            continue
        try:
            hook()
        except Exception as exc:
            name = getattr(handler, "name", type(handler).__name__)
            report_once(
                f"producer_lost:{type(exc).__name__}", f"{name!r}: producer_lost() failed: {exc!r}"
            )
