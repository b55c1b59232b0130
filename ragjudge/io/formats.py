"""Formats and where bytes come from: a format's name from a suffix (or sniffed from stdin's first
bytes), stdin as a peekable stream, and stdin spooled to a file so it can be read twice."""

from __future__ import annotations

import atexit
import glob
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from ragjudge.errors import InputError

FORMATS = ("jsonl", "csv", "parquet", "json")
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}


STDIN = "-"  # an input's name for stdin (``ragjudge score -``): compared in ``is_stdin`` only


def is_stdin(path: object) -> bool:
    """Whether the input ``path`` is stdin (``-``); False for anything not a string (a DataFrame)."""
    return isinstance(path, str) and path == STDIN


def suffix_format(path: str) -> str | None:
    """The table format ``path``'s suffix names (``scored.csv``: csv), None for another suffix."""
    return SUFFIXES.get(os.path.splitext(path)[1].lower())


def detect_format(path: str, explicit: str | None = None, many: bool = True) -> str:
    """Format name for ``path`` from ``explicit`` or the suffix; for ``-`` (stdin) it is
    sniffed from the first bytes (use ``explicit`` for stdout); for a folder or a glob it is
    its files' one format (``sources.source_files``) unless ``many`` is False (an output).

    Raises ``InputError`` for an unknown format or suffix.
    """
    if explicit:
        if explicit not in FORMATS:
            raise InputError(f"unknown format '{explicit}'; use one of: {', '.join(FORMATS)}")
        return explicit
    if many and is_many(path):  # a folder or a glob: its files' one format
        return source_files(path)[1]
    if is_stdin(path):
        return sniff_stdin()
    suffix = Path(path).suffix.lower()
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    if not many:  # an output (``-o``)
        raise InputError(f"cannot tell the format of '{path}' from its suffix; name it {', '.join(sorted(SUFFIXES))}, or give "
                         f"ragjudge score --format {'|'.join(FORMATS)}")
    raise InputError(f"cannot tell the format of '{path}' from its suffix; pass --input-format {'|'.join(FORMATS)} (traces: "
                     "--input-format otlp|phoenix|mlflow-traces)")


class _Stdin:
    """What the readers read of one ``sys.stdin`` (``origin``, held: a freed stream's id() can be
    reused by the next one): a binary stream that supports ``peek`` (``stream``), replaying the
    first bytes looked at (``head``, ``stdin_head``) or reading the temporary copy of all of it
    (``path``, ``spool_stdin``). ``sys.stdin`` itself is never replaced."""

    def __init__(self, origin: Any) -> None:
        self.origin = origin
        raw = origin.buffer
        self.stream: IO[bytes] = raw if hasattr(raw, "peek") else io.BufferedReader(raw)
        self.head: bytes | None = None
        self.path: str | None = None


_CURRENT: list[_Stdin] = []


def _state() -> _Stdin:
    """The ``_Stdin`` of the current ``sys.stdin`` (a new one when the process's stdin changed:
    a caller put its own in place; the copy of the one before is closed). ``InputError`` when the
    process has no stdin (closed: ``<&-``)."""
    if sys.stdin is None:
        raise InputError("stdin is closed: pipe the input in (ragjudge score - < rows.jsonl) or give its path")
    if not _CURRENT or _CURRENT[0].origin is not sys.stdin:
        for earlier in _CURRENT:
            if earlier.path is not None:
                earlier.stream.close()
        _CURRENT[:] = [_Stdin(sys.stdin)]
    return _CURRENT[0]


def _stdin() -> IO[bytes]:
    """stdin as the readers read it: a binary stream that supports ``peek`` (for format
    sniffing), from its first byte (``stdin_head``'s replayed, or ``spool_stdin``'s copy)."""
    return _state().stream


class _Replay(io.RawIOBase):
    """Bytes already read from a stream, then the rest of that stream."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        read = getattr(self._rest, "read1", self._rest.read)
        data = read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def stdin_head(size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of stdin (fewer only at its end), waiting for a slow writer as
    long as it takes; the readers then read them again (``peek`` returns only what one read of a
    pipe brought, which a format guess should not hang on)."""
    state = _state()
    if state.head is not None:
        return state.head
    source = state.stream
    read = getattr(source, "read1", source.read)
    blocks: list[bytes] = []
    total = 0
    while total < size:
        block = read(size - total)
        if not block:
            break
        blocks.append(block)
        total += len(block)
    state.head = b"".join(blocks)
    state.stream = io.BufferedReader(_Replay(state.head, source), 1 << 16)  # type: ignore[arg-type]
    return state.head


def spool_stdin() -> str:
    """Read all of stdin into a temporary file (removed at exit), which the readers then read
    as stdin, so that its rows can be counted (``--sample``) and then read as usual. Returns the
    file's path; called again for the same stdin, it returns the same path."""
    state = _state()
    if state.path is not None:
        return state.path
    path = _temporary_copy(state.stream, ".ragjudge-stdin.")
    state.stream, state.path = open(path, "rb"), path
    atexit.register(_remove_spooled, state.stream, path)
    return path


def is_stream(path: Any) -> bool:
    """Whether ``path`` names a pipe or a device, not a file: ``<(command)`` in a shell
    (``/dev/fd/63``), a named pipe, ``/dev/stdin``. Such a source can be read once only."""
    import stat

    if not isinstance(path, (str, os.PathLike)) or is_stdin(path):
        return False
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def spool_stream(path: str) -> str:
    """Copy the pipe or device at ``path`` (``is_stream``) to a temporary file, removed at exit,
    and return the copy's path: its rows can then be counted (``--sample``) and read."""
    with open(path, "rb") as stream:
        copy = _temporary_copy(stream, f".ragjudge-copy-of-{os.path.basename(path)}.")
    atexit.register(_remove_spooled, None, copy)
    return copy


def readable(source: Any, fmt: str | None, sample: int | None) -> Any:
    """The path to read ``source`` from: ``source`` itself, or a temporary copy (``spool_stream``)
    of a pipe whose rows must be counted (``sample``) or that is read by seeking (Parquet).
    (stdin, ``-``, is copied by ``spool_stdin``.)"""
    if is_stream(source) and (sample is not None or fmt == "parquet"):
        return spool_stream(source)
    return source


def _temporary_copy(stream: IO[bytes], prefix: str) -> str:
    """Copy ``stream`` to a new temporary file named with ``prefix``; returns its path."""
    with tempfile.NamedTemporaryFile(prefix=prefix, delete=False) as handle:
        shutil.copyfileobj(stream, handle, 1 << 20)
    return handle.name


def _remove_spooled(copy: IO[bytes] | None, path: str) -> None:
    """At exit: close stdin's copy (``spool_stdin``), if any, and remove the copied file."""
    if copy is not None:
        copy.close()
    if os.path.exists(path):
        os.unlink(path)


def sniff_stdin() -> str:
    """Guess the format of stdin from its first bytes: Parquet magic, '[' JSON, '{' JSONL, else CSV."""
    head = _stdin().peek(64)[:64].removeprefix(b"\xef\xbb\xbf").lstrip()  # type: ignore[attr-defined]  # a UTF-8 BOM says nothing
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"["):
        return "json"
    if head.startswith(b"{") or not head:
        return "jsonl"
    return "csv"


def _open_binary(path: str) -> IO[bytes]:
    if is_stdin(path):
        return _stdin()
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"input file not found: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


class Copy(str):
    """The path of a temporary copy of a pipe or of stdin (``spool_stream``, ``spool_stdin``), which
    every message of the readers names as the user named the input (``name``)."""

    name: str

    def __new__(cls, path: str, name: str) -> Copy:
        copy = super().__new__(cls, path)
        copy.name = name
        return copy


def _name(path: str) -> str:
    """``path`` as messages name it: ``<stdin>`` for ``-``, the user's name for a ``Copy``."""
    return path.name if isinstance(path, Copy) else "<stdin>" if is_stdin(path) else path


def is_many(source: str) -> bool:
    """Whether ``source`` names a folder or a glob (not one file, not stdin)."""
    if is_stdin(source) or Path(source).is_file():
        return False
    return Path(source).is_dir() or any(ch in source for ch in "*?[")


def source_files(source: str, explicit: str | None = None) -> tuple[list[str], str]:
    """The files of ``source`` (a file, a folder, searched recursively, or a glob; ``**``
    spans folders) in sorted order, and their one format (``explicit``, else the suffixes').
    Raises ``InputError`` when nothing matches, no file has a table's suffix, or the files'
    formats differ."""
    if explicit and explicit not in FORMATS:
        raise InputError(f"unknown format '{explicit}'; use one of: {', '.join(FORMATS)}")
    path = Path(source)
    if path.is_file():
        found = [source]
    elif path.is_dir():
        found = sorted(str(p) for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
    elif any(ch in source for ch in "*?["):
        matched = [p for p in glob.glob(source, recursive=True) if Path(p).is_file()]
        if not matched:
            raise InputError(f"input file not found: {source} (no file matches it)")
        found = sorted(p for p in matched if Path(p).suffix.lower() in SUFFIXES)
    else:
        raise InputError(f"input file not found: {source}")
    if not found:
        raise InputError(f"{source}: no readable file (.jsonl, .csv, .parquet, .json) in it")
    if explicit:
        return found, explicit
    if len(found) == 1 and Path(found[0]).suffix.lower() not in SUFFIXES:
        return found, detect_format(found[0])
    formats = sorted({SUFFIXES[Path(p).suffix.lower()] for p in found})
    if len(formats) > 1:
        raise InputError(f"{source}: the files are of different formats ({', '.join(formats)}); give a folder or glob of one format")
    return found, formats[0]


def count_records(path: str, fmt: str) -> int | None:
    """The number of records (rows) the reader of ``fmt`` yields for the file at ``path``,
    for ``--sample``, the dry run and the progress total: a CSV cell may span several lines,
    so CSV is counted by pandas' own parser (one column read), JSONL by its non-blank lines
    (one object a line), Parquet from its metadata. None where counting would mean reading
    the whole table into memory (stdin, a JSON array) or the file cannot be read (the reader
    then says why), and for a pipe (``is_stream``), which can be read once only."""
    if is_stdin(path) or fmt == "json" or is_stream(path):  # a pipe read to count it would be read empty
        return None
    if is_many(path):
        counts = [count_records(file, fmt) for file in source_files(path, fmt)[0]]
        return None if None in counts else sum(counts)  # type: ignore[arg-type]
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).metadata.num_rows
        if fmt == "csv":
            import pandas as pd

            chunks = pd.read_csv(path, usecols=[0], dtype=str, keep_default_na=False, chunksize=100_000, index_col=False,
                                 encoding="utf-8-sig", encoding_errors="replace")
            return sum(len(chunk) for chunk in chunks)
        with open(path, "rb") as handle:  # blank as the JSONL reader sees it (a BOM, Unicode spaces)
            return sum(1 for n, line in enumerate(handle) if line.decode("utf-8-sig" if n == 0 else "utf-8", "replace").strip())
    except Exception:  # a malformed file: the reader names the fault when it reads it
        return None
