"""Media helpers users call directly (robo-goggles' ``goggles.media``).

* ``yaml_dump`` for numpy-laden mappings;
* ``save_numpy_image`` / ``save_numpy_gif`` / ``save_numpy_mp4``: arrays to files;
* ``create_numpy_*_visualization`` / ``save_numpy_*_visualization``: pictures of trajectories
  and vector fields.

``LocalStorageHandler`` writes its media files through these same functions. pillow,
imageio-ffmpeg and matplotlib are imported only inside the function that needs them, so
``import goggles_io.media`` pulls in none of them.
"""

from __future__ import annotations

from typing import Any

from goggles_io._util.plain_yaml import dump_plain, to_plain
from goggles_io.media._files import save_numpy_gif, save_numpy_image, save_numpy_mp4
from goggles_io.media._pixels import to_frames, to_uint8
from goggles_io.media._plots import (
    create_numpy_trajectories_visualization,
    create_numpy_vector_field_visualization,
    save_numpy_trajectories_visualization,
    save_numpy_vector_field_visualization,
)

__all__ = [
    "create_numpy_trajectories_visualization",
    "create_numpy_vector_field_visualization",
    "save_numpy_gif",
    "save_numpy_image",
    "save_numpy_mp4",
    "save_numpy_trajectories_visualization",
    "save_numpy_vector_field_visualization",
    "to_frames",
    "to_uint8",
    "yaml_dump",
]


def yaml_dump(obj: Any) -> str:
    """Return ``obj`` as block-style YAML text that any safe YAML loader reads back.

    numpy arrays (object arrays included) become nested lists and numpy scalars Python numbers,
    in values and in keys, so the text needs no Python-specific tags. Keys may be str, int,
    float, bool or None; mapping order is kept.

    Raises:
        InvalidPayloadError: a key or value has no plain YAML form (an arbitrary object, bytes,
            a complex number); the message names its key path. Also a ``ValueError``.
    """
    return dump_plain(to_plain(obj, string_keys=False))
