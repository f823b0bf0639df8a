"""``python -m goggles_io.leftovers``: deliver what earlier runs' ``finish()`` kept for later.

When ``finish()`` gives up on a handler that takes nothing (``GOGGLES_FINISH_STALL``) or is
cut short by Ctrl-C, the events it could not deliver stay on disk with their handlers' specs
(``leftover-<pid>-<start time>/`` under ``GOGGLES_SPOOL_DIR``). The next process that logs on
the machine delivers them first; this command does the same without logging anything: it
rebuilds the handlers on the host (``GOGGLES_SOCKET``), sends the events, waits while the
handlers make progress, and removes each folder once its events were all taken. Exit status:
0 when everything found was delivered (or nothing was found), 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Deliver every left-over folder of a process that is gone; print what became of them."""
    parser = argparse.ArgumentParser(
        prog="python -m goggles_io.leftovers",
        description="Deliver the events earlier runs' finish() kept for later on this machine.",
    )
    parser.parse_args(argv)
    from goggles_io._bus.settings import read_settings
    from goggles_io._transport.client import SocketClient
    from goggles_io._transport.settings import read_transport_settings

    client = SocketClient(read_settings(), read_transport_settings())
    root = client.leftovers.root
    found = client.deliver_leftovers()
    if not found:
        print(f"no left-over events under {root}")
        return 0
    report = client.finish()
    leftovers = client.leftovers
    print(
        f"{leftovers.found} left-over events from {found} folders: "
        f"{leftovers.delivered_folders} folders delivered in full"
        + (f"; {leftovers.note()}" if leftovers.written else "")
    )
    return 0 if leftovers.delivered_folders == found and not report.timed_out else 1


if __name__ == "__main__":
    sys.exit(main())
