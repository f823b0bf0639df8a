"""Other loggers' APIs over goggles_io: scripts written for them log here with one import changed.

``goggles_io.compat.tensorboard`` is TensorBoard's ``SummaryWriter`` (and ``patch()`` for
torch's and tensorboardX's); ``goggles_io.compat.wandb`` is W&B's ``init`` / ``log``. Each
submodule is imported only when asked for, so importing this package costs nothing and pulls in
no optional dependency.
"""

from __future__ import annotations

__all__: list[str] = []
