"""`write_atomically`: a file replaced whole, by any number of writers at once.

A record written in place can be read half-written, and one written through a fixed
temporary name (``name.tmp``) can be two writers' bytes interleaved: two saves of a batch
record, or of a session file, from two threads. Here each write goes to a temporary file of
its own beside the target and then replaces the target (`os.replace`, atomic on one file
system): a reader sees the old text or the new, never a mix, and a failed write leaves the
old file and no temporary one.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterable
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(
    path: str | os.PathLike[str], text: str | Iterable[str], *, make_folder: bool = True
) -> None:
    """Replace ``path`` with ``text`` (UTF-8; an iterable is written piece by piece), making
    its folder unless ``make_folder=False`` (then a missing one is the `OSError`); see the
    module for why this way."""
    target = Path(path)
    if make_folder:
        target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            if isinstance(text, str):
                out.write(text)
            else:
                out.writelines(text)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
