"""Compatibility fronts: scripts written for another logger log through goggles_io unchanged.

``goggles_io.compat.tensorboard`` is TensorBoard's ``SummaryWriter`` (and ``patch()`` for
torch's and tensorboardX's); ``goggles_io.compat.wandb`` is W&B's ``init`` / ``log``. Each is
imported by path; nothing is imported here.
"""

from __future__ import annotations

__all__: list[str] = []
