"""Headers that keep what a run holds inert in the dashboard's origin, and download names.

A run's files (``/api/media/file``) are anyone's bytes: an HTML report or an SVG with a script
would otherwise run with the dashboard's origin and its API key cookie. So every run file goes
out under a sandboxing Content-Security-Policy (an opaque origin, no script, no plug-ins, no
forms), and any type but a short list of passive ones (images, video, audio, plain text, CSV,
JSON, arrays) as a download (``Content-Disposition: attachment``). An ``<img>`` still shows an
SVG: attachment only changes what a navigation does, and an image runs no script. Download
names of any script go out as RFC 6266 ``filename*`` (UTF-8, RFC 5987) with an ASCII fallback.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from urllib.parse import quote

__all__ = ["RUN_FILE_CSP", "attachment", "run_file_headers"]

RUN_FILE_CSP = (
    "sandbox; default-src 'none'; img-src 'self' data:; media-src 'self'; style-src 'unsafe-inline'"
)
"""What a run's file may do when opened: show itself and its inline styles; nothing runs."""
_PASSIVE = frozenset(
    ".png .jpg .jpeg .gif .webp .bmp .avif .mp4 .webm .ogv .ogg .mp3 .wav .txt .log .csv .tsv "
    ".json .jsonl .npy .npz".split()
)
_UNSAFE = frozenset('<>:"/\\|?*')
_MAX_NAME = 150
_MAX_EXT = 16  # longer than this after the last dot: no extension to keep


def _clean(name: str) -> str:
    """``name`` without control, format (bidi overrides) or path characters, at most
    ``_MAX_NAME`` characters: a long name is cut before its extension, which stays."""
    clean = "".join("_" if c in _UNSAFE or unicodedata.category(c)[0] == "C" else c for c in name)
    if len(clean) <= _MAX_NAME:
        return clean
    stem, dot, ext = clean.rpartition(".")
    if not dot or not stem or len(ext) > _MAX_EXT:
        return clean[:_MAX_NAME]
    return stem[: _MAX_NAME - len(ext) - 1] + "." + ext


def attachment(name: str) -> str:
    """A ``Content-Disposition`` value that saves the file as ``name``, whatever its script.

    ``filename`` is an ASCII stand-in for old clients; ``filename*`` carries the name itself.
    """
    clean = _clean(name)
    fallback = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in clean)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(clean, safe='')}"


def run_file_headers(path: Path) -> dict[str, str]:
    """Headers for serving one of a run's files: the sandbox, and a download unless passive."""
    headers = {"content-security-policy": RUN_FILE_CSP}
    if path.suffix.lower() not in _PASSIVE:
        headers["content-disposition"] = attachment(path.name)
    return headers
