"""TensorBoard's ``SummaryWriter`` on goggles_io: a script changes one import line.

``from goggles_io.compat.tensorboard import SummaryWriter`` takes the calls scripts make of
``torch.utils.tensorboard`` / tensorboardX's writer (``add_scalar`` ... ``add_hparams``,
``flush``, ``close``, ``with``) and logs each as a goggles_io event into a run
(:class:`~goggles_io.runs.RunContext`) through a ``LocalStorageHandler``: ``log.jsonl`` and
media folders, read by ``open_run``, ``telemetry ui`` and ``telemetry diff``. The run's root is
the log directory's parent, its slug the log directory's name (``SummaryWriter("runs/exp1")``
makes ``runs/<stamp>-exp1-<hex>/``; :attr:`SummaryWriter.log_dir` says where). Nothing is
sampled or held back for minutes: each call is an event on the bus (about 2 µs), written by
the handler's worker. :func:`patch` makes torch's and tensorboardX's own ``SummaryWriter``
build this one, so unchanged scripts and libraries (Stable Baselines3) arrive too.
"""

from __future__ import annotations

import atexit
import datetime as _dt
import itertools
import socket
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, cast

import numpy as np

import goggles_io as gg
from goggles_io import GogglesLogger
from goggles_io.compat import _tb_patch
from goggles_io.compat import _tb_values as tv
from goggles_io.handlers.storage import LocalStorageHandler
from goggles_io.runs import RunContext, register_run
from goggles_io.runs.compare import typed
from goggles_io.runs.hparams import HPARAMS_TAGS, markdown_table
from goggles_io.runs.status import RunStatus

__all__ = ["SummaryWriter", "patch", "unpatch"]

_NUMBER = (int, float, bool, str)
_serial = itertools.count()
_open: weakref.WeakSet[SummaryWriter] = weakref.WeakSet()
_failed = threading.Event()  # an uncaught exception ended the script: open runs close failed


def _default_log_dir(comment: str) -> Path:
    """TensorBoard's default: ``runs/<Mon DD_HH-MM-SS>_<host><comment>``."""
    stamp = _dt.datetime.now().strftime("%b%d_%H-%M-%S")
    return Path("runs") / f"{stamp}_{socket.gethostname()}{comment}"


class SummaryWriter:
    """TensorBoard's writer API, logging into a goggles_io run.

    Args:
        log_dir: The TensorBoard log directory (``logdir`` is tensorboardX's name for it);
            its parent is the runs root and its name the run's slug. Default
            ``runs/<date>_<host><comment>`` as TensorBoard does.
        comment: Appended to the default log directory's name.
        project: The run's project (the dashboard's group); default ``"tensorboard"``.
        **kwargs: TensorBoard's other arguments (``purge_step``, ``max_queue``,
            ``flush_secs``, ``filename_suffix``, ...), accepted and not needed: events are
            written as they come, not every ``flush_secs``.

    ``global_step`` left out takes the metric's previous step + 1 (TensorBoard writes 0);
    ``walltime`` given is kept as the point's ``time`` (robo-goggles' caller-given time).
    Methods with no goggles_io kind (``add_graph``, ``add_embedding``, ``add_audio``,
    ``add_pr_curve``, ``add_mesh``) warn once and do nothing (the tfevents mirror of
    :func:`patch` still gets them).
    """

    def __init__(
        self,
        log_dir: str | Path | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
        *,
        logdir: str | Path | None = None,
        project: str = "tensorboard",
        **kwargs: Any,
    ) -> None:
        chosen = log_dir if log_dir is not None else logdir
        path = Path(chosen) if chosen is not None else _default_log_dir(str(comment))
        root = path.parent if path.name else path
        self._run = RunContext(project=project, driver=sys.argv[0] or "python", slug=path.name
                               or "tensorboard", root=root)  # fmt: skip
        self.log_dir = str(self._run.dir)
        self.logdir = self.log_dir  # tensorboardX's name
        serial = next(_serial)
        self._name = f"compat.tensorboard.{serial}"
        self._scope = f"tensorboard.w{serial}"
        self._handler = LocalStorageHandler(self._run.dir, name=self._name)
        gg.attach(self._handler, scopes=[self._scope])
        register_run(self._run, self._handler)
        self._log = cast(
            GogglesLogger, gg.get_logger("tensorboard", scope=self._scope, with_metrics=True)
        )
        self._mirror: Any = None  # the original writer, when patch(keep_tfevents=True)
        self._warned: set[str] = set()
        self._closed = False
        _open.add(self)
        _watch_exit()

    def __repr__(self) -> str:
        return f"SummaryWriter(log_dir={self.log_dir!r}, run={self._run.id!r})"

    @property
    def run(self) -> RunContext:
        """The goggles_io run this writer logs into (``run.set_config``, ``run.dir``)."""
        return self._run

    def get_logdir(self) -> str:
        """The run directory (TensorBoard's log directory)."""
        return self.log_dir

    # -- scalars ------------------------------------------------------------------------------
    def add_scalar(
        self,
        tag: str,
        scalar_value: Any,
        global_step: Any = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Log one scalar point of ``tag`` at ``global_step``."""
        self._check_open()
        self._log.scalar(tag, tv.to_float(scalar_value), tv.to_step(global_step), time=walltime)
        if self._mirror is not None:
            self._mirror.add_scalar(tag, scalar_value, global_step, walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: Mapping[str, Any],
        global_step: Any = None,
        walltime: float | None = None,
    ) -> None:
        """Log several scalars as ``<main_tag>/<tag>`` at one step (TensorBoard makes a
        sub-run per tag; here they are metrics of this run)."""
        self._check_open()
        values = {f"{main_tag}/{k}": tv.to_float(v) for k, v in tag_scalar_dict.items()}
        self._log.push(values, tv.to_step(global_step), time=walltime)
        if self._mirror is not None:
            self._mirror.add_scalars(main_tag, tag_scalar_dict, global_step, walltime)

    # -- media --------------------------------------------------------------------------------
    def add_histogram(
        self,
        tag: str,
        values: Any,
        global_step: Any = None,
        bins: Any = "tensorflow",
        walltime: float | None = None,
        max_bins: int | None = None,
    ) -> None:
        """Log the raw samples of a histogram (binned when shown; an int ``bins`` is kept)."""
        self._check_open()
        samples = tv.to_array(values).astype(float, copy=False).reshape(-1)
        extra: dict[str, Any] = (
            {"bins": bins} if isinstance(bins, int) and not isinstance(bins, bool) else {}
        )
        self._log.histogram(samples, tv.to_step(global_step), name=tag, time=walltime, **extra)
        if self._mirror is not None:
            self._mirror.add_histogram(tag, values, global_step, bins, walltime, max_bins)

    def add_image(
        self,
        tag: str,
        img_tensor: Any,
        global_step: Any = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Log an image given in TensorBoard's layout (``CHW`` by default; float in [0, 1])."""
        self._image(tag, img_tensor, global_step, walltime, dataformats, batch=False)

    def add_images(
        self,
        tag: str,
        img_tensor: Any,
        global_step: Any = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Log a batch of images as one grid image, as TensorBoard shows it."""
        self._image(tag, img_tensor, global_step, walltime, dataformats, batch=True)

    def _image(
        self,
        tag: str,
        img: Any,
        step: Any,
        walltime: float | None,
        dataformats: str,
        *,
        batch: bool,
    ) -> None:
        """One image (a batch: its grid) logged here, and the same call made on the mirror."""
        self._check_open()
        pixels = tv.image_hwc(img, dataformats)
        self._log.image(pixels, tv.to_step(step), name=tag, time=walltime)
        if self._mirror is not None:
            mirrored = self._mirror.add_images if batch else self._mirror.add_image
            mirrored(tag, img, step, walltime, dataformats)

    def add_figure(
        self,
        tag: str,
        figure: Any,
        global_step: Any = None,
        close: bool = True,
        walltime: float | None = None,
    ) -> None:
        """Log a matplotlib figure (or a list of them, as a grid) as an image."""
        self._check_open()
        if self._mirror is not None:  # drawn there first: it closes the figure after
            self._mirror.add_figure(tag, figure, global_step, False, walltime)
        if isinstance(figure, (list, tuple)):
            pixels = tv.grid(np.stack([tv.figure_pixels(f, close) for f in figure]))
        else:
            pixels = tv.figure_pixels(figure, close)
        self._log.image(pixels, tv.to_step(global_step), name=tag, time=walltime)

    def add_video(
        self,
        tag: str,
        vid_tensor: Any,
        global_step: Any = None,
        fps: float = 4,
        walltime: float | None = None,
    ) -> None:
        """Log a ``(N, T, C, H, W)`` video (float in [0, 1] or uint8) at ``fps``."""
        self._check_open()
        frames = tv.video_thwc(vid_tensor)
        self._log.video(frames, tv.to_step(global_step), name=tag, fps=fps, time=walltime)
        if self._mirror is not None:
            self._mirror.add_video(tag, vid_tensor, global_step, fps, walltime)

    # -- text and settings --------------------------------------------------------------------
    def add_text(
        self, tag: str, text_string: str, global_step: Any = None, walltime: float | None = None
    ) -> None:
        """Log a block of text; a ``hyperparameters`` markdown table (CleanRL's
        ``|param|value|`` rows) is also recorded as the run's config."""
        self._check_open()
        if tag in HPARAMS_TAGS:
            table = markdown_table(text_string)
            if table:
                self._run.set_config({key: typed(value) for key, value in table.items()})
        self._log.text(str(text_string), tv.to_step(global_step), name=tag)
        if self._mirror is not None:
            self._mirror.add_text(tag, text_string, global_step, walltime)

    def add_hparams(
        self,
        hparam_dict: Mapping[str, Any],
        metric_dict: Mapping[str, Any],
        hparam_domain_discrete: Mapping[str, Any] | None = None,
        run_name: str | None = None,
        global_step: Any = None,
    ) -> None:
        """Record ``hparam_dict`` as the run's config and log ``metric_dict`` as scalars.

        Raises:
            ConfigConflictError: a key was already recorded with another value (config is
                recorded once per run; TensorBoard would start a sub-run instead).
        """
        self._check_open()
        config = {}
        for key, value in hparam_dict.items():
            plain = value.item() if callable(getattr(value, "item", None)) else value
            config[str(key)] = plain if isinstance(plain, _NUMBER) or plain is None else str(plain)
        self._run.set_config(config)
        step = tv.to_step(global_step)
        for name, value in metric_dict.items():
            self._log.scalar(str(name), tv.to_float(value), 0 if step is None else step)
        if self._mirror is not None:
            self._mirror.add_hparams(
                hparam_dict, metric_dict, hparam_domain_discrete, run_name, global_step
            )

    def add_custom_scalars(self, layout: Mapping[str, Any]) -> None:
        """Keep TensorBoard's custom-scalars layout as the artifact ``custom_scalars.json``
        (the dashboard groups metrics by name prefix on its own)."""
        self._check_open()
        self._log.artifact(dict(layout), name="custom_scalars", format="json")
        if self._mirror is not None:
            self._mirror.add_custom_scalars(layout)

    def __getattr__(self, name: str) -> Callable[..., None]:
        if not name.startswith("add_"):
            raise AttributeError(name)

        def unsupported(*args: Any, **kwargs: Any) -> None:
            if name not in self._warned:
                self._warned.add(name)
                warnings.warn(
                    f"SummaryWriter.{name} has no goggles_io kind: not logged to the run"
                    + (" (written to the tfevents mirror)" if self._mirror is not None else ""),
                    stacklevel=2,
                )
            if self._mirror is not None:
                getattr(self._mirror, name)(*args, **kwargs)

        return unsupported

    # -- lifecycle ----------------------------------------------------------------------------
    def flush(self) -> None:
        """Wait until everything logged so far reached the run's files."""
        gg.flush()
        if self._mirror is not None:
            self._mirror.flush()

    def close(self, status: str = RunStatus.DONE) -> None:
        """Write everything, close the handler and mark the run ``status`` (idempotent)."""
        if self._closed:
            return
        self._closed = True
        _open.discard(self)
        try:
            gg.flush()
            gg.detach(self._name, self._scope)
        finally:
            self._run.close(status)
            if self._mirror is not None:
                self._mirror.close()

    def _check_open(self) -> None:
        if self._closed:
            msg = f"SummaryWriter for {self.log_dir!r} is closed; make a new one to log more."
            raise ValueError(msg)

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        exc = exc_info[1]  # (type, exception, traceback): only the exception matters here
        self.close(RunStatus.DONE if exc is None else RunStatus.FAILED)


def patch(*, keep_tfevents: bool = False, project: str = "tensorboard") -> None:
    """Make ``torch.utils.tensorboard.SummaryWriter`` and ``tensorboardX.SummaryWriter`` build
    this module's :class:`SummaryWriter`: an unchanged script logs through goggles_io.

    Call it before the script makes its writer (a module imported later is patched when it
    is imported; torch is never imported here). A second call changes the options;
    :func:`unpatch` undoes it. Subclasses of the original writers are left as they are.

    Args:
        keep_tfevents: Also write TensorBoard's own event files, into the run directory
            (each call mirrored to the original writer), for TensorBoard itself.
        project: The project of the runs the writers make.
    """
    _tb_patch.patch(SummaryWriter, keep_tfevents=keep_tfevents, project=project)


def unpatch() -> None:
    """Give torch's and tensorboardX's writers back their own constructors."""
    _tb_patch.unpatch()


_hooked = False


def _watch_exit() -> None:
    """Close writers the script left open at exit: ``failed`` after an uncaught exception,
    ``done`` otherwise (TensorBoard scripts often never call ``close``)."""
    global _hooked
    if _hooked:
        return
    _hooked = True
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        _failed.set()
        previous(kind, exc, tb)

    sys.excepthook = hook
    atexit.register(_close_all)


def _close_all() -> None:
    status = RunStatus.FAILED if _failed.is_set() else RunStatus.DONE
    for writer in list(_open):
        writer.close(status)
