"""The on-disk response cache (diskcache): judge replies keyed by everything that changes them.

The key is a SHA-256 of: provider-resolved model, the API base actually called (flag, config
or environment; ``ragjudge.transports.endpoint``), sampling parameters (temperature, max
tokens, seed, response format), rendered messages, metric, ``PROMPT_VERSION`` and the
sample number. Retries, timeouts, concurrency and API keys are not part of it. Only
successful, parsed replies are stored. diskcache is SQLite-backed, so two runs may share
one directory at once.

Writes are gathered and stored ``WRITE_BATCH`` at a time in one SQLite transaction (a commit
per reply cost about 0.1 ms of CPU each, bench figure 1c); a reply not yet stored is read
from the batch, and ``flush``/``close`` store the rest, so a run that ends or is
interrupted keeps every reply; only a process killed outright loses up to ``WRITE_BATCH``
of them. Culling to the size limit runs when the cache is closed, not on every write.

The cache is a side store: a write that fails (a full disk, SQLite's "database or disk is full",
a file past the process's size limit, an I/O error) never fails the run or a row. A batch that
cannot be stored is stored one reply at a time, as far as it fits; the replies that could not
be (``not_kept``, the first error in ``write_error``) are only not cached: their verdicts stand,
and the run says so once (``ragjudge.scoring.Scorer.cache_notes``). See
grantjenks/python-diskcache#112 for how diskcache reports a full disk (an ``OperationalError``
from SQLite, or an ``OSError`` for a value kept in a file).
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any
from ragjudge.errors import ConfigError

SIZE_LIMIT_BYTES = 8 * 2**30
WRITE_BATCH = 64  # replies stored per SQLite transaction


def default_cache_dir() -> Path:
    """Per-user cache folder by platform convention (e.g. ``~/.cache/ragjudge`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("ragjudge", appauthor=False))


def cache_key(**parts: Any) -> str:
    """Stable SHA-256 hex digest of ``parts``: the digest of
    ``json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)``
    (the keys every earlier version wrote). orjson makes the same bytes about five times
    faster (``key_bytes``); whatever it would write differently goes through ``json``."""
    return hashlib.sha256(key_bytes(parts)).hexdigest()


def key_bytes(parts: dict[str, Any]) -> bytes:
    """``parts`` as the UTF-8 bytes of ``json.dumps(parts, sort_keys=True, ensure_ascii=True,
    separators=(",", ":"), default=str)``. Fast path: orjson (sorted keys; text escaped to
    ASCII as ``json`` escapes it), taken only where its output is provably the same: every
    value a str, an int in 64 bits, a bool, None, a finite float whose ``repr`` has no
    exponent, or a dict (str keys) or list of those. Anything else (numpy numbers, tuples,
    objects written with ``default=str``, lone surrogates) goes through ``json``."""
    if all(_plain(value, 1) if key != "messages" else _messages_plain(value) for key, value in parts.items()):
        try:
            import orjson

            blob = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)
        except (ImportError, TypeError):
            blob = None
        if blob is not None:
            if b"\x7f" in blob:  # json escapes DEL, orjson does not
                blob = blob.replace(b"\x7f", b"\\u007f")
            if blob.isascii():
                return blob
            return blob.decode("utf-8").encode("ascii", "ragjudge-json-escape")
    return json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str).encode("utf-8")


# id -> (container, its orjson bytes then, plain), least recently seen first: a container changed
# in place since (its bytes differ) is looked at again
_SEEN: OrderedDict[int, tuple[Any, Any, bool]] = OrderedDict()
_SEEN_MAX = 512


def _plain(value: Any, depth: int) -> bool:
    """Whether orjson writes ``value`` exactly as ``json.dumps`` (see ``key_bytes``). A
    container is looked at once and remembered while it is held here and writes the same bytes
    as then (a judge's JSON schema is the same object for every row); messages are text, looked
    at each time."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -(2**63) <= value < 2**64
    if kind is float:
        text = repr(value)
        return "e" not in text and "n" not in text  # no exponent, nan or inf
    if kind is not dict and kind is not list or depth > 64:
        return False
    try:
        import orjson

        written = orjson.dumps(value)  # what it holds now (C speed): a change in place shows here
    except (ImportError, TypeError):
        return False
    seen = _SEEN.get(id(value))
    if seen is not None and seen[0] is value and seen[1] == written:  # the same object, unchanged since
        _SEEN.move_to_end(id(value))
        return seen[2]
    if kind is dict:
        plain = all(type(k) is str and _plain(v, depth + 1) for k, v in value.items())
    else:
        plain = all(_plain(v, depth + 1) for v in value)
    _SEEN[id(value)] = (value, written, plain)
    if len(_SEEN) > _SEEN_MAX:
        _SEEN.popitem(last=False)
    return plain


def _messages_plain(messages: Any) -> bool:
    """``_plain`` for a list of chat messages whose values are text (the usual case), else the walk."""
    if type(messages) is list and all(type(m) is dict and all(type(k) is str and type(v) is str for k, v in m.items()) for m in messages):
        return True
    return _plain(messages, 1)


def _json_escape(error: UnicodeError) -> tuple[str, int]:
    """A codec error handler writing non-ASCII text as ``json``'s ``ensure_ascii`` does:
    ``\\uXXXX`` (lowercase hex), a surrogate pair above U+FFFF."""
    assert isinstance(error, UnicodeEncodeError)
    out = []
    for char in error.object[error.start:error.end]:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), error.end


codecs.register_error("ragjudge-json-escape", _json_escape)


def cache_exists(directory: str | Path | None = None) -> bool:
    """Whether ``directory`` (None: the per-user cache folder) holds a response cache (its
    ``responses`` folder), found without making one: what only reads the cache looks first."""
    return ((Path(directory) if directory else default_cache_dir()) / "responses").is_dir()


def reading(config: Any) -> Any:
    """``config`` (a ``ragjudge.settings.Config``) for a command that only reads the cache (the dry
    run, calibrate): with the cache off where its folder holds none, so that looking makes no
    folder (nothing there to find: no hits)."""
    if config.cache.enabled and not cache_exists(config.cache.dir):
        return config.model_copy(update={"cache": config.cache.model_copy(update={"enabled": False})})
    return config


class ResponseCache:
    """A diskcache ``Cache`` of parsed judge replies under ``directory/responses``."""

    def __init__(self, directory: str | Path | None = None) -> None:
        import sqlite3

        import diskcache

        self.directory = Path(directory) if directory else default_cache_dir()
        self._pending: dict[str, dict[str, Any]] = {}
        self.written = 0  # replies given to ``set`` and written
        self.not_kept = 0  # replies given to ``set`` that could not be written (a full disk, an I/O error)
        self.write_error: str | None = None  # the first such write's error, as SQLite or the OS said it
        # what a write that fails raises: SQLite's errors ("database or disk is full", "disk I/O error", "attempt
        # to write a readonly database"), an OSError for a value diskcache keeps in a file, diskcache's Timeout
        # for a lock another process held past its timeout
        self._write_errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError, diskcache.Timeout)
        self._reader: Any = None  # read-only SQLite connection of get_many (False: not usable)
        try:
            self._cache = diskcache.Cache(str(self.directory / "responses"), size_limit=SIZE_LIMIT_BYTES, cull_limit=0)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cannot use the cache folder {self.directory} ({exc}); choose another with --cache-dir, "
                f"remove {self.directory / 'responses'} if it is damaged, or run with --no-cache"
            ) from None

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for ``key`` (one not yet written included, as a copy: the caller may
        change what it gets, as it may a reply read from disk), or None."""
        pending = self._pending.get(key) if self._pending else None
        if pending is not None:
            import copy

            return copy.deepcopy(pending)
        return self._cache.get(key)

    def get_many(self, keys: list[str]) -> dict[str, dict[str, Any] | None]:
        """``get`` for each of ``keys`` (distinct): {key: reply or None}. The replies on disk are
        read with one SQL query per 500 keys on a read-only connection of this cache's own
        (``_read_many``): about a quarter of the CPU of as many ``get`` calls (bench figure
        1c), and, as ``get``, a read that never waits for another process writing the cache.
        Where that read cannot be made, each key is read with ``get``."""
        found: dict[str, dict[str, Any] | None] = {}
        rest = []
        for key in keys:
            if self._pending and key in self._pending:
                found[key] = self.get(key)
            else:
                rest.append(key)
        read = self._read_many(rest) if len(rest) > 1 else None
        if read is None:
            read = {key: self._cache.get(key) for key in rest}
        found.update(read)
        return found

    def _read_many(self, keys: list[str]) -> dict[str, Any] | None:
        """The replies stored under ``keys`` (None for a key not stored), read as diskcache's own
        ``get`` reads them (its ``Cache`` table, values decoded by its ``Disk.fetch``) but many
        keys per query, in SQLite's WAL mode (a reader never waits for a writer). None where
        this cache's settings make ``get`` do more than read (statistics, an eviction policy
        that records reads) or the table cannot be read so: the caller then uses ``get``."""
        import sqlite3
        import time

        if self._reader is False or self._cache.statistics or self._cache.eviction_policy not in ("least-recently-stored", "none"):
            return None
        try:
            if self._reader is None:
                path = (Path(self._cache.directory) / "cache.db").resolve()
                self._reader = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
            disk = self._cache.disk
            out: dict[str, Any] = dict.fromkeys(keys)
            now = time.time()
            for start in range(0, len(keys), 500):
                part = keys[start:start + 500]
                rows = self._reader.execute(
                    f"SELECT key, mode, filename, value FROM Cache WHERE raw = 1 AND key IN ({','.join('?' * len(part))}) "
                    "AND (expire_time IS NULL OR expire_time > ?)", (*part, now)).fetchall()
                for key, mode, filename, value in rows:
                    try:
                        out[key] = disk.fetch(mode, filename, value, False)
                    except OSError:  # its file removed since (culled): not stored, as get says
                        out[key] = None
            return out
        except (sqlite3.Error, ValueError):
            self._reader = False  # not this way again
            return None

    def set(self, key: str, value: dict[str, Any]) -> None:
        """Keep ``value`` under ``key``; stored with the next ``WRITE_BATCH`` (or at ``flush``)."""
        self._pending[key] = value
        if len(self._pending) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        """Store every reply kept by ``set`` and not written yet, in one transaction. Never
        raises for a write that fails (a full disk, an I/O error, a lock held too long: ``_write_errors``): the batch is
        then stored one reply at a time until one fails, and the replies not stored are counted
        in ``not_kept`` (the first error in ``write_error``); they are only not cached."""
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        try:
            with self._cache.transact():
                for key, value in pending.items():
                    self._cache.set(key, value)
            self.written += len(pending)
            return
        except self._write_errors as exc:
            self._failed(exc)
        left = len(pending)
        for key, value in pending.items():  # as many as still fit (a reply is a few hundred bytes)
            try:
                self._cache.set(key, value)
            except self._write_errors as exc:
                self._failed(exc)
                break
            left -= 1
            self.written += 1
        self.not_kept += left

    def _failed(self, exc: BaseException) -> None:
        if self.write_error is None:
            self.write_error = f"{type(exc).__name__}: {exc}"

    def info(self) -> dict[str, Any]:
        """{'directory': str, 'entries': int, 'size_bytes': int, 'models': [(path, bytes)]}:
        the response cache's entries and size on disk (bytes), and the embedded judge's
        model files assembled under ``directory/models`` (not part of the response cache;
        ``clear`` keeps them)."""
        models_dir = self.directory / "models"
        models = sorted((str(p), p.stat().st_size) for p in models_dir.glob("*.gguf") if p.is_file()) if models_dir.is_dir() else []
        return {"directory": str(self.directory), "entries": len(self._cache), "size_bytes": int(self._cache.volume()), "models": models}

    def clear(self) -> int:
        """Remove every entry; returns how many were removed."""
        self._pending.clear()
        return int(self._cache.clear())

    def close(self) -> None:
        """Store what is pending, cull to the size limit (least recently stored first), close.
        A write that fails here is counted as ``flush`` counts it; a cull that fails (a full
        disk) is left for the next run."""
        try:
            if self._reader:
                self._reader.close()
            self._reader = None
            self.flush()
            try:
                self._cache.cull()
            except self._write_errors as exc:
                self._failed(exc)
        finally:
            self._cache.close()
