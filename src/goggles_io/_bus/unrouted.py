"""Events on a scope no handler is attached to: said once per scope, counted.

With nothing attached at all goggles_io stays silent (a library that logs before the
application configured anything, as stdlib logging's ``NullHandler`` allows). Once some handler
is attached, an event whose scope reaches none of them is most often a typo or a handler
attached on the wrong scope: the first such event of each scope is named on stderr with the
scopes that do have handlers, and every one is counted (``EventBus.unrouted``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from goggles_io._util.report import report

__all__ = ["Unrouted"]


class Unrouted:
    """Counts, per scope, events no handler was attached to receive; warns on the first."""

    def __init__(self, scopes: Callable[[], Iterable[str]]) -> None:
        self.counts: dict[str, int] = {}
        self.enabled = True  # a broker consumer's bus routes a whole stream: it stays quiet
        self._scopes = scopes

    def __call__(self, scope: str, n: int = 1) -> None:
        """``n`` events of ``scope`` reached no handler."""
        seen = self.counts.get(scope)
        self.counts[scope] = (seen or 0) + n
        if seen is None and self.enabled:
            attached = sorted(set(self._scopes()))
            report(
                f"events on scope {scope!r} reach no handler (handlers are attached on "
                f"{attached!r}; a scope reaches those it starts with, e.g. 'global' gets "
                f"'global.train'); they are dropped and counted, this is said once per scope"
            )
