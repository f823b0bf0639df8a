"""The deliverer of ``python -m goggles_io.leftovers``: every folder a dead process left, once.

It opens the spool root once, then, folder by folder: skips one whose owner still runs, claims
the others (``flock``, then a rename: :func:`~goggles_io._transport.leftover_folder.claim`), reads
each whole before any of it is delivered, replays it into its own run's handlers
(:mod:`~goggles_io._transport.host.leftover_delivery`), and removes it once every handler took
everything. Each folder gets one line on stderr saying what became of it, in the words of what
happened: delivered (and how many each handler took), kept for a later delivery (and why),
refused (another user's, a symlink), or unreadable (and why; renamed ``unreadable-...``).
Nothing here is ever counted lost unless a handler raised on an event or refused it itself.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import attrs

from goggles_io._bus.settings import Settings
from goggles_io._delivery.spool_space import _DIR_FLAGS
from goggles_io._transport.host.leftover_delivery import Delivered, check_folder, deliver_folder
from goggles_io._transport.leftover_folder import (
    Folder,
    Refused,
    Unreadable,
    claim,
    leftover_names,
    owner_alive,
)
from goggles_io._util.liveness import start_time
from goggles_io._util.report import report

__all__ = ["Summary", "deliver_all"]


@attrs.define
class Summary:
    """What one run of the deliverer found and did."""

    folders: int = 0  # folders of dead processes it took on (claimed, refused or unreadable)
    delivered: int = 0  # of them, delivered in full and removed
    events: int = 0  # events in the folders it claimed and could read
    taken: int = 0  # events every handler of their folder took (in the folders delivered)
    lost: int = 0  # events a handler raised on or refused itself
    refused: int = 0
    unreadable: int = 0
    kept: int = 0  # folders left for a later delivery (a handler stalled, or Ctrl-C)
    abandoned: bool = False

    @property
    def ok(self) -> bool:
        """Everything found was delivered, nothing lost (the command's exit status 0)."""
        return self.delivered == self.folders and not self.lost


def deliver_all(root: Path, settings: Settings, stall_s: float) -> Summary:
    """Deliver every left-over folder under ``root`` whose owner is gone; never raises for a
    folder (each is reported and the others go on)."""
    out = Summary()
    try:
        root_fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)  # the root itself may be a link
    except OSError:
        return out
    ids = itertools.count(1)
    me = f"leftover-{os.getpid()}-{start_time(os.getpid()) or 0}-from-"
    try:
        for name in leftover_names(root):
            if out.abandoned:
                break
            if name.startswith(me) or owner_alive(name):
                continue
            _one(root, root_fd, name, f"{me}{next(ids)}", settings, stall_s, out)
    except KeyboardInterrupt:  # the folder being read stays, claimed by us: a later one takes it
        out.abandoned = True
    finally:
        os.close(root_fd)
    return out


def _one(
    root: Path,
    root_fd: int,
    name: str,
    mine: str,
    settings: Settings,
    stall_s: float,
    out: Summary,
) -> None:
    """Claim, check, deliver and report one folder."""
    try:
        folder = claim(root_fd, name, mine)
    except Refused as exc:
        out.folders += 1
        out.refused += 1
        report(f"left-over folder {root / name} not delivered: {exc}; left as it is")
        return
    except Unreadable as exc:
        out.folders += 1
        out.unreadable += 1
        report(
            f"left-over folder {root / name} cannot be delivered ({exc}); left as it is, "
            f"renamed unreadable-{name}"
        )
        return
    except OSError:
        return  # gone meanwhile
    if folder is None:
        return  # another deliverer has it
    out.folders += 1
    try:
        try:
            manifest, ops = check_folder(folder)
            result = deliver_folder(folder, manifest, ops, settings=settings, stall_s=stall_s)
        except Unreadable as exc:
            out.unreadable += 1
            folder.leave_unreadable()
            report(
                f"left-over folder {root / name} cannot be delivered ({exc}); left as it is, "
                f"as {root / folder.name}"
            )
            return
        _account(root, name, folder, manifest, result, stall_s, out)
    finally:
        folder.release()


def _account(
    root: Path,
    name: str,
    folder: Folder,
    manifest: dict[str, object],
    result: Delivered,
    stall_s: float,
    out: Summary,
) -> None:
    out.events += result.events
    out.lost += result.lost
    out.abandoned = out.abandoned or result.abandoned
    words = _handlers_line(result)
    whose = f"pid {manifest.get('pid')}'s {result.events} left-over events ({name})"
    if result.complete and not (result.stalled or result.abandoned):
        out.delivered += 1
        out.taken += result.events
        gone = folder.remove(root)
        where = "folder removed" if gone else f"folder {root / folder.name} could not be removed"
        lost = f"; {result.lost} lost: {_lost_words(result)}" if result.lost else ""
        report(f"delivered {whose} into their own run's handlers: {words}{lost}; {where}")
        return
    out.kept += 1
    if result.abandoned:
        why = "Ctrl-C"
    elif result.stalled:
        why = f"a handler took nothing for {stall_s:g} s (GOGGLES_FINISH_STALL)"
    else:
        why = "; ".join(f"{n} cannot be rebuilt here ({w})" for n, w in result.unbuilt.items())
    report(
        f"{whose}: {words}; the rest stays in {root / folder.name} ({why}): the next "
        "delivery sends it again, marked redelivered"
    )


def _handlers_line(result: Delivered) -> str:
    parts = []
    for name, s in sorted(result.handlers.items()):
        logged = s.logged if s.logged is not None else s.delivered
        part = f"{name}: {s.delivered} delivered"
        if s.delivered != logged:
            part = f"{name}: {s.delivered} of {logged} delivered"
        parts.append(part)
    return ", ".join(parts) or "no handler to deliver them to"


def _lost_words(result: Delivered) -> str:
    parts = []
    for name, s in sorted(result.handlers.items()):
        if s.failed:
            parts.append(f"{name} raised on {s.failed}")
        for reason, n in sorted(s.losses.items()):
            parts.append(f"{name}: {n} {reason}")
    return ", ".join(parts)
