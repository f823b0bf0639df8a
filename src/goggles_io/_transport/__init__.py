"""The multi-process transport: one host per socket path, frames over a Unix socket, shm for big arrays.

Everything that touches sockets, shared memory or processes lives in this private subpackage.
"""

from __future__ import annotations

__all__: list[str] = []
