"""Atomic output: a file appears whole or not at all (a temporary file beside it, then a rename)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO

from ragjudge.errors import InputError, OutputError


STDOUT = "-"  # an output's name for stdout (``-o -``, ``--summary-json -``): compared in ``to_stdout`` and ``to_file`` only


def to_stdout(path: object) -> bool:
    """Whether the output ``path`` is stdout (``-``)."""
    return path == STDOUT


def to_file(path: object) -> bool:
    """Whether an output is asked for (``path`` not None nor empty) and is not stdout: a file or
    a folder to be written."""
    return bool(path) and path != STDOUT


def names_folder(path: str | None) -> bool:
    """Whether the output ``path`` names a folder: an existing folder, or a name that ends in
    ``/`` (``-o scored/``), which is written as a folder or refused, never as a file of that name."""
    return to_file(path) and (str(path).endswith(("/", os.sep)) or os.path.isdir(str(path)))


def open_atomic(path: str) -> tuple[IO[bytes], str | None]:
    """Open ``path`` for writing: a temporary file beside the real target (a symlink is
    followed), renamed into place by the caller, with the mode a plain ``open`` would give
    (the umask applies). A FIFO or device is written directly (temp path None).
    Raises ``InputError`` when the folder is missing or not writable, and when ``path`` names
    a folder (``names_folder``)."""
    if path.endswith(("/", os.sep)):  # realpath would drop the slash and write a file of the folder's name
        raise InputError(f"output path is a folder: {path}")
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise InputError(f"output folder does not exist: {Path(path).parent}")
    if target.exists() and not target.is_file():
        if target.is_dir():
            raise InputError(f"output path is a folder: {path}")
        return open(target, "wb"), None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write to {target.parent}: {exc.strerror or exc}") from None
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    return os.fdopen(fd, "wb"), tmp


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through ``open_atomic``: the file appears whole or
    not at all (the temporary file is removed when writing fails). Raises what
    ``open_atomic`` raises, and ``OSError`` from the write."""
    handle, tmp = open_atomic(path)
    try:
        with handle:
            handle.write(text.encode("utf-8"))
        if tmp is not None:
            os.replace(tmp, os.path.realpath(path))
    except BaseException:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _output_error(path: str, exc: OSError) -> OutputError:
    if to_stdout(path) and isinstance(exc, BrokenPipeError):
        return OutputError("stdout was closed before the output was complete (the command reading the pipe stopped early)")
    return OutputError(f"cannot write {'<stdout>' if to_stdout(path) else path}: {exc.strerror or exc}")
