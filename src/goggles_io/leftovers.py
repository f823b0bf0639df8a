"""``python -m goggles_io.leftovers``: deliver what earlier runs' ``finish()`` kept for later.

When ``finish()`` gives up on a handler that takes nothing (``GOGGLES_FINISH_STALL``) or is
cut short by Ctrl-C, the events it could not deliver stay on disk with the specs of the
handlers they were logged for (``leftover-<pid>-<start time>/`` under ``GOGGLES_SPOOL_DIR``).
The next process that logs on the machine starts this command in the background; run it
yourself to deliver them now, and see what became of them.

Each folder is replayed into the handlers of the run that logged it, rebuilt here from their
recorded specs (so they write that run's folder), never into another run's: the live host is
not involved (ADR 0060). A folder is claimed first (a lock on it, then a rename), so two
deliverers at once never both deliver it; it is removed once every handler took all of its
events. The spool is read as untrusted input (ADR 0061): a FIFO or symlink where a file is
expected, a folder of another user, a damaged record: each is reported in one line and left
as it is. Handler classes are imported as the host imports them (the spec's module, and
``GOGGLES_HOST_IMPORTS``). The wait gives up after ``GOGGLES_FINISH_STALL`` seconds in which no
handler took anything (at least 1 s; Ctrl-C at once): what is left stays in the folder for a
later delivery, marked redelivered then; it is never counted lost.

One line per folder goes to stderr, and a summary to stdout. Exit status: 0 when every folder
found was delivered in full with nothing lost (or nothing was found), 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main"]

_MIN_STALL_S = (
    1.0  # GOGGLES_FINISH_STALL=0 ("finish does not wait") must not make it give up at once
)


def main(argv: list[str] | None = None) -> int:
    """Deliver every left-over folder of a process that is gone; print what became of them."""
    parser = argparse.ArgumentParser(
        prog="python -m goggles_io.leftovers",
        description="Deliver the events earlier runs' finish() kept for later on this machine, "
        "each folder into its own run's handlers.",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no summary on stdout (the background deliverer)"
    )
    args = parser.parse_args(argv)
    from goggles_io._bus.settings import read_settings
    from goggles_io._delivery.drain import read_finish_stall
    from goggles_io._delivery.spool_space import spool_space
    from goggles_io._transport.host.leftover_deliverer import deliver_all
    from goggles_io._transport.settings import read_transport_settings
    from goggles_io._util.report import report

    settings = read_settings()
    for module in read_transport_settings().host_imports:  # custom classes, as the host does
        try:
            importlib.import_module(module)
        except Exception as exc:
            report(f"GOGGLES_HOST_IMPORTS: cannot import {module!r}: {exc!r}")
    root = spool_space(settings.delivery).root
    summary = deliver_all(root, settings, max(read_finish_stall(), _MIN_STALL_S))
    if args.quiet:
        return 0 if summary.ok else 1
    if not summary.folders:
        print(f"no left-over events under {root}")
        return 0
    kept = f", {summary.kept} kept for a later delivery" if summary.kept else ""
    bad = summary.refused + summary.unreadable
    print(
        f"{summary.events} left-over events from {summary.folders} folders: "
        f"{summary.delivered} folders delivered in full{kept}"
        + (f", {bad} refused or unreadable" if bad else "")
        + (f"; {summary.lost} events lost (a handler raised on them)" if summary.lost else "")
    )
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
