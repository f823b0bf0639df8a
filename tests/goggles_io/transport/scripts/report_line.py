"""One JSON line of a FinishReport, as the transport tests' producer scripts print it."""

from __future__ import annotations

import json

import goggles_io as gg

__all__ = ["print_report"]


def print_report(report: gg.FinishReport, handler: str, **extra: object) -> None:
    """Print ``extra``, the transport's losses, ``handler``'s tally and the totals as JSON."""
    stats = report.handlers.get(handler)
    tally = None
    if stats is not None:
        tally = [stats.delivered, stats.dropped, stats.errors, dict(stats.losses)]
    line = {
        **extra,
        "transport": dict(report.transport.losses),
        "handler": tally,
        "dropped": report.dropped,
        "lost": report.lost,
        "timed_out": report.timed_out,
    }
    print(json.dumps(line), flush=True)
