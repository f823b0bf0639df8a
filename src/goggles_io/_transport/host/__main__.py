"""``python -m goggles_io._transport.host --socket PATH``: the dedicated host process."""

from __future__ import annotations

import sys

from goggles_io._transport.host.server import main

if __name__ == "__main__":
    sys.exit(main())
