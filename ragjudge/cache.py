"""The on-disk response cache (diskcache): judge replies keyed by everything that changes them.

The key is a SHA-256 of: provider-resolved model, the API base actually called (flag, config
or environment; ``ragjudge.transports.endpoint``), sampling parameters (temperature, max
tokens, seed, response format), rendered messages, metric, ``PROMPT_VERSION`` and the
sample number. Retries, timeouts, concurrency and API keys are not part of it. Only
successful, parsed replies are stored. diskcache is SQLite-backed, so two runs may share
one directory at once.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

SIZE_LIMIT_BYTES = 8 * 2**30


def default_cache_dir() -> Path:
    """Per-user cache folder by platform convention (e.g. ``~/.cache/ragjudge`` on Linux)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("ragjudge", appauthor=False))


def cache_key(**parts: Any) -> str:
    """Stable SHA-256 hex digest of ``parts`` (JSON with sorted keys)."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    """A diskcache ``Cache`` of parsed judge replies under ``directory/responses``."""

    def __init__(self, directory: str | Path | None = None) -> None:
        import sqlite3

        import diskcache

        from ragjudge.errors import ConfigError

        self.directory = Path(directory) if directory else default_cache_dir()
        try:
            self._cache = diskcache.Cache(str(self.directory / "responses"), size_limit=SIZE_LIMIT_BYTES)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(
                f"cannot use the cache folder {self.directory} ({exc}); choose another with --cache-dir, "
                f"remove {self.directory / 'responses'} if it is damaged, or run with --no-cache"
            ) from None

    def get(self, key: str) -> dict[str, Any] | None:
        return self._cache.get(key)

    def set(self, key: str, value: dict[str, Any]) -> None:
        self._cache.set(key, value)

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
        return int(self._cache.clear())

    def close(self) -> None:
        self._cache.close()
