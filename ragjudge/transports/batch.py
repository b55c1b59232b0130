"""A run through a provider's batch API, as the model chokepoint sees it: a transport that
answers a call from the replies a batch returned, and otherwise writes the call down to be
submitted (``BatchTransport``), and the manifest that keeps a batch run's state on disk
between processes (``Manifest``).

Every call is named by its cache key (``Request.key``; the re-ask of an unreadable reply by
``custom_id``'s digest of the key), which is the line's ``custom_id`` in the batch. The manifest
(``manifest.json`` in a batch folder, beside the output or in the cache folder) records each
batch submitted (id, input file, round, the calls in it, its last status) and each call's state:
``open`` (in a batch not yet collected), ``answered`` (its reply is in ``replies.jsonl``, the
folder's other file) or ``failed`` (the batch returned an error for it, or it expired; with its
error and how many times it was submitted). Writes are atomic (a temporary file, then
``os.replace``), so a process killed at any point leaves the last state whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ragjudge.errors import ConfigError
from ragjudge.transports import base
from ragjudge.transports.base import TransportError
from ragjudge.types import Reply

VERSION = 1
MAX_TRIES = 3  # a line that failed or expired is submitted again until it was sent this many times
OPEN, ANSWERED, FAILED = "open", "answered", "failed"


def custom_id(key: str, ask: int = 0) -> str:
    """The batch line's name of a call: its cache key (64 hex digits), or for the re-ask of an
    unreadable reply (``ask`` 1) the SHA-256 of the key and ``:reask`` (Anthropic takes at most 64
    characters)."""
    return key if not ask else hashlib.sha256(f"{key}:reask{ask}".encode()).hexdigest()


class Manifest:
    """A batch run's state in ``folder`` (``manifest.json`` and ``replies.jsonl``); see the module
    docstring. ``data``: the manifest as a dict (``batches``, ``calls``, ``run``, ``model``,
    ``api_base``). Raises ``OSError`` where the folder cannot be written."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / "manifest.json"
        self.replies_path = self.folder / "replies.jsonl"
        self.data: dict[str, Any] = {"version": VERSION, "batches": [], "calls": {}}
        self._replies: dict[str, int] | None = None
        if self.path.exists():
            self.data = json.loads(self.path.read_text(encoding="utf-8"))
            self._check()

    def _check(self) -> None:
        """Raise ``ConfigError`` (exit 2) for a manifest whose shape is not one a batch run writes
        (edited by hand, cut short): every batch an object, every call an object."""
        data = self.data
        batches, calls = (data.get("batches"), data.get("calls")) if isinstance(data, dict) else (None, None)
        if not (isinstance(batches, list) and all(isinstance(b, dict) for b in batches)
                and isinstance(calls, dict) and all(isinstance(c, dict) for c in calls.values())):
            raise ConfigError(f"{self.path}: not a batch manifest as ragjudge writes it ('batches' a list of objects, 'calls' an "
                              "object of objects); restore it, or remove its folder and run with --batch again (calls already "
                              "collected are in the response cache)")
        if data.get("version", VERSION) != VERSION:
            raise ConfigError(f"{self.path}: a batch manifest of version {data.get('version')!r}; this ragjudge reads version {VERSION}: "
                              "collect it with the ragjudge that submitted it")

    @property
    def exists(self) -> bool:
        return self.path.exists()

    @property
    def calls(self) -> dict[str, dict[str, Any]]:
        """custom_id -> {"state", "batch", "tries", "error"}."""
        return self.data["calls"]

    @property
    def batches(self) -> list[dict[str, Any]]:
        """Each batch submitted, oldest first: {"id", "input_file_id", "round", "calls", "status",
        "counts", "collected"}."""
        return self.data["batches"]

    def open_batches(self) -> list[dict[str, Any]]:
        """The batches submitted and not collected yet (an entry whose batch was never created
        included: ``id`` None, its input file uploaded)."""
        return [b for b in self.batches if not b.get("collected")]

    def save(self) -> None:
        """Write the manifest atomically."""
        self.folder.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".manifest.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, self.path)

    def replies(self) -> dict[str, int]:
        """custom_id -> where its reply's line starts in ``replies.jsonl`` (bytes), read once: the
        replies themselves stay on disk (``reply``), so a run of many calls holds only their names."""
        if self._replies is None:
            self._replies = {}
            if self.replies_path.exists():
                with open(self.replies_path, "rb") as handle:
                    offset = 0
                    for raw in handle:
                        if raw.strip():
                            try:
                                self._replies[json.loads(raw)["custom_id"]] = offset
                            except (ValueError, KeyError, TypeError):  # a line cut by a process killed while appending: collected again
                                pass
                        offset += len(raw)
        return self._replies

    def reply(self, cid: str) -> dict[str, Any] | None:
        """The reply line of ``cid`` (``{"custom_id", "body", "batch"}``), or None."""
        offset = self.replies().get(cid)
        if offset is None:
            return None
        with open(self.replies_path, "rb") as handle:
            handle.seek(offset)
            return json.loads(handle.readline())

    def add_replies(self, lines: list[dict[str, Any]]) -> None:
        """Append replies (``{"custom_id", "body", "batch": True}``) to ``replies.jsonl``, flushed
        to disk before the manifest says their calls are answered."""
        if not lines:
            return
        replies = self.replies()
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.replies_path, "a+b") as handle:
            offset = handle.seek(0, os.SEEK_END)
            if offset:
                handle.seek(offset - 1)
                if handle.read(1) != b"\n":  # a line cut by a process killed while appending: ended, never joined to the next
                    handle.write(b"\n")
                    offset += 1
            for line in lines:
                raw = json.dumps(line, sort_keys=True).encode("utf-8") + b"\n"
                handle.write(raw)
                replies[line["custom_id"]] = offset
                offset += len(raw)
            handle.flush()
            os.fsync(handle.fileno())

    def record(self, results: list[tuple[str, Any, str | None, bool]]) -> tuple[int, int]:
        """Read one results file's lines (a client's ``results``: (custom_id, reply body or None,
        error or None, final)) into the replies and the calls' states: a body answers its call;
        an error fails it (``final``: for good, sent again it would fail again). Returns
        (answered, failed)."""
        answered = [{"custom_id": cid, "body": body, "batch": True} for cid, body, error, _ in results if error is None]
        failed = 0
        for cid, _, error, final in results:
            if error is not None:
                self.fail(cid, error, final)
                failed += 1
        self.add_replies(answered)
        for item in answered:
            entry = self.calls.setdefault(item["custom_id"], {"tries": 1})
            entry.update(state=ANSWERED, error=None)
        return len(answered), failed

    def fail(self, cid: str, message: str, final: bool = False) -> None:
        """Mark ``cid`` failed with ``message``; ``final``: never sent again."""
        entry = self.calls.setdefault(cid, {"tries": 1})
        entry.update(state=FAILED, error=message)
        if final:
            entry["tries"] = max(int(entry.get("tries") or 1), MAX_TRIES)

    def submitted(self, batch: dict[str, Any], ids: list[str]) -> None:
        """Record ``batch`` (its input file uploaded) with the calls ``ids`` in it, and save."""
        batch.setdefault("submitted_at", time.time())
        batch["calls"] = len(ids)
        self.batches.append(batch)
        for cid in ids:
            entry = self.calls.setdefault(cid, {"tries": 0})
            entry.update(state=OPEN, batch=batch["input_file_id"], tries=int(entry.get("tries") or 0) + 1, error=None)
        self.save()


class BatchTransport(base.Transport):
    """The model's transport in a batch run. ``inner``: the transport of direct calls (its
    ``provider_model`` and endpoint name the cache keys); ``manifest``: the run's ``Manifest``;
    ``reply``: the batch client's reader of a reply's body (-> ``Reply``, at the batch price);
    ``final``: the run's last pass.

    ``complete`` answers a call whose reply a batch returned (``Reply.batch``: priced at the
    batch price). Otherwise, in a finding pass (``final`` False) a call not sent yet, or failed
    and sent fewer than ``MAX_TRIES`` times, is written down in ``wanted`` (custom_id -> the
    request) and raises ``TransportError`` ``PENDING``, as does a call in a batch not collected.
    In the final pass (and for failed calls with ``fallback`` "direct") a call the batch did not
    answer is made directly through ``inner`` with ``fallback`` "direct", else it is the row's
    error, naming the batch's reason. Replies of a finding pass are not cached (``cacheable``):
    the final pass caches and prices them, so its cost columns show what the batch cost. A line
    the provider refused for its ``response_format`` is asked again without it, in the next
    batch, as a direct call's 400 is (``base.RESPONSE_FORMAT``)."""

    free = False

    def __init__(self, inner: Any, manifest: Manifest, reply: Any, final: bool = False, fallback: str = "resubmit") -> None:
        self.inner = inner
        self.manifest = manifest
        self.reply = reply
        self.final = final
        self.fallback = fallback
        self.provider_model = inner.provider_model
        self.where = inner.where
        self.cacheable = final
        self.wanted: dict[str, base.Request] = {}
        self.direct = 0  # calls made directly (--batch-fallback direct)

    def prepaid(self, request: base.Request) -> bool:
        """Whether a batch already answered ``request`` (paid when it was submitted: the budget,
        ``judge.max_cost``, never refuses it)."""
        return request.key is not None and custom_id(request.key, request.ask) in self.manifest.replies()

    async def complete(self, request: base.Request) -> Reply:
        if request.key is None:
            raise TransportError(base.OTHER, "a batch call needs its cache key")
        cid = custom_id(request.key, request.ask)
        line = self.manifest.reply(cid)
        if line is not None:
            return self.reply(line.get("body") or {})
        entry = self.manifest.calls.get(cid)
        state = entry.get("state") if entry else None
        if state == OPEN:
            raise TransportError(base.PENDING, f"in a batch not collected yet (input {entry.get('batch')})")  # type: ignore[union-attr]
        refused = state == FAILED and base.rejects_response_format(str(entry.get("error") or ""))  # type: ignore[union-attr]
        if refused:
            self.manifest.data["refuses_response_format"] = True  # later rounds' calls go without it from the start
        if request.response_format is not None and (refused or self.manifest.data.get("refuses_response_format")):
            # the chokepoint asks again without it, as for a direct call's 400
            raise TransportError(base.RESPONSE_FORMAT, str(entry.get("error")) if refused else "the batch API refused response_format")  # type: ignore[union-attr]
        if refused:
            if not self.final:
                self.wanted[cid] = request
                raise TransportError(base.PENDING, "written into the next batch, without response_format")
        if state == FAILED and self.fallback == "direct" or (self.final and self.fallback == "direct"):
            if not self.final:
                raise TransportError(base.PENDING, "judged directly in the run's last pass (--batch-fallback direct)")
            self.direct += 1
            return await self.inner.complete(request)
        if state == FAILED and int(entry.get("tries") or 0) >= MAX_TRIES:  # type: ignore[union-attr]
            raise TransportError(base.OTHER, f"the batch API failed this call {entry['tries']} time(s): {entry.get('error')}; "  # type: ignore[index]
                                             "--batch-fallback direct judges it without the batch")
        if self.final:
            raise TransportError(base.OTHER, "not answered by the batch: run the command again to submit it")
        self.wanted[cid] = request
        raise TransportError(base.PENDING, "written into the next batch")

    async def aclose(self) -> None:
        await self.inner.aclose()
