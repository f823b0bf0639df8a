"""Media helpers users call directly: ``yaml_dump`` for numpy-laden mappings.

Image and video files are written by ``LocalStorageHandler`` (``handlers/_media.py``), which
imports pillow and imageio only when it writes one; this module imports neither.
"""

from __future__ import annotations

from typing import Any

from goggles_io._util.plain_yaml import dump_plain, to_plain

__all__ = ["yaml_dump"]


def yaml_dump(data: Any) -> str:
    """Return ``data`` as block-style YAML text that any safe YAML loader reads back.

    numpy arrays (object arrays included) become nested lists and numpy scalars Python numbers,
    in values and in keys, so the text needs no Python-specific tags. Keys may be str, int,
    float, bool or None; mapping order is kept.

    Raises:
        InvalidPayloadError: a key or value has no plain YAML form (an arbitrary object, bytes,
            a complex number); the message names its key path. Also a ``ValueError``.
    """
    return dump_plain(to_plain(data, string_keys=False))
