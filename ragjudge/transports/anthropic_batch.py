"""Anthropic's Message Batches over aiohttp: the calls of a batch sent inline, run within 24 hours
at half the price, their results read back as JSON Lines.

The protocol, mapped by hand (``anthropic-version: 2023-06-01``, the key in ``x-api-key``):

- ``POST {base}/v1/messages/batches`` with ``{"requests": [{"custom_id", "params"}]}``, each
  ``params`` a Messages API body (``model``, ``max_tokens``, ``temperature``, ``system``,
  ``messages``) -> the batch (``id``, ``processing_status``, ``request_counts``, ``results_url``);
- ``GET {base}/v1/messages/batches/{id}``: its status (in_progress, canceling, ended) and
  counts (processing, succeeded, errored, canceled, expired);
- ``GET {results_url}``: one line a call, ``{"custom_id", "result": {"type": "succeeded",
  "message"} | {"type": "errored", "error"} | {"type": "expired"} | {"type": "canceled"}}``.

The judge's JSON is asked for by the prompt, which spells it out (the Messages API has no
``response_format``; a direct call through litellm maps it to a tool). The batch has no input
file: ``upload`` keeps the lines in this process until ``create`` sends them, so a process killed
between the two leaves a batch entry that is submitted again, never twice (it was never sent). A
create sent without its answer coming back is looked for in ``GET /v1/messages/batches``
(``search``): an ended batch by its results' custom ids; a running one of as many requests cannot
be ruled out.
"""

from __future__ import annotations

import os
from typing import Any

from ragjudge import prices
from ragjudge.transports import base
from ragjudge.transports.base import TransportError, endpoint
from ragjudge.transports.openai_batch import LIST_PAGE, OpenAIBatches
from ragjudge.types import Reply, Usage
from ragjudge.transports.openai_http import loads

ANTHROPIC_BASE = "https://api.anthropic.com"
VERSION = "2023-06-01"
PREFIX = "anthropic/"


def serves(provider_model: str) -> bool:
    """Whether ``provider_model`` (as resolved: ``anthropic/NAME``) is Anthropic's."""
    return provider_model.startswith(PREFIX)


def params(name: str, request: base.Request) -> dict[str, Any]:
    """The Messages API body of ``request`` for the model ``name``: system messages joined into
    ``system``, the others as ``messages``, ``max_tokens``, ``temperature``."""
    system = "\n\n".join(str(m.get("content") or "") for m in request.messages if m.get("role") == "system")
    body: dict[str, Any] = {"model": name, "max_tokens": request.max_tokens, "temperature": request.temperature,
                            "messages": [{"role": m["role"], "content": m.get("content")} for m in request.messages
                                         if m.get("role") != "system"]}
    if system:
        body["system"] = system
    return body


class AnthropicBatches(OpenAIBatches):
    """Anthropic's Message Batches for ``settings`` (``judge.api_base`` or ``ANTHROPIC_API_BASE``,
    else Anthropic's own; the key from ``judge.api_key_env``, else ``ANTHROPIC_API_KEY``).
    ``provider_model``: the model as resolved (``anthropic/NAME``). The methods ``OpenAIBatches``
    has, for the driver (``ragjudge.run.batch``)."""

    provider = "anthropic"

    def __init__(self, settings: Any, provider_model: str) -> None:
        self.settings = settings
        self.name = provider_model[len(PREFIX):]
        found = (endpoint(settings, provider_model) or ANTHROPIC_BASE).rstrip("/")
        self.base = found[:-3] if found.endswith("/v1") else found
        self._session = None
        self._pending: dict[str, list[dict[str, Any]]] = {}

    def _headers(self) -> dict[str, str]:
        env = self.settings.api_key_env or "ANTHROPIC_API_KEY"
        key = os.environ.get(env)
        if not key:
            raise TransportError(base.NO_KEY, f"no API key in {env}")
        return {"x-api-key": key, "anthropic-version": VERSION}

    def line(self, custom_id: str, request: base.Request) -> dict[str, Any]:
        """One request of the batch: ``{"custom_id", "params"}``."""
        return {"custom_id": custom_id, "params": params(self.name, request)}

    async def upload(self, lines: list[dict[str, Any]]) -> str:
        """Keep ``lines`` for ``create`` (a Message Batch takes its requests inline); returns a
        local name for them."""
        import hashlib

        local = "local-" + hashlib.sha256("".join(line["custom_id"] for line in lines).encode()).hexdigest()[:24]
        self._pending[local] = lines
        return local

    def holds(self, input_file_id: str) -> bool:
        """Whether this process still holds the requests kept under ``input_file_id``."""
        return input_file_id in self._pending

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> dict[str, Any]:
        """Send the requests kept under ``input_file_id``; returns the batch, in OpenAI's shape
        (``status``). Raises ``TransportError`` (``OTHER``) when this process does not hold them
        (a process killed after ``upload``: the driver submits the calls again)."""
        lines = self._pending.get(input_file_id)
        if lines is None:
            raise TransportError(base.OTHER, f"the requests of {input_file_id} were never sent")
        made = await self._http("POST", "/v1/messages/batches", json={"requests": lines}, retry=frozenset({base.RATE_LIMIT}))
        self._pending.pop(input_file_id, None)
        return self._shaped(made)

    async def get(self, batch_id: str) -> dict[str, Any]:
        return self._shaped(await self._http("GET", f"/v1/messages/batches/{batch_id}"))

    async def _page(self, cursor: str | None) -> tuple[list[dict[str, Any]], bool]:
        """One page of ``GET /v1/messages/batches``, newest first, after the batch ``cursor``
        (``after_id``): (batches, has_more)."""
        params = {"limit": str(LIST_PAGE), **({"after_id": cursor} if cursor else {})}
        answer = await self._http("GET", "/v1/messages/batches", params=params)
        return list(answer.get("data") or []), bool(answer.get("has_more"))

    @staticmethod
    def _created(item: dict[str, Any]) -> float:
        """A Message Batch's ``created_at`` (RFC 3339) in Unix seconds (infinity where unreadable)."""
        from datetime import datetime

        try:
            return datetime.fromisoformat(str(item["created_at"]).replace("Z", "+00:00")).timestamp()
        except (KeyError, ValueError):
            return float("inf")

    async def _owns(self, item: dict[str, Any], entry: dict[str, Any], ids: list[str]) -> bool | None:
        """Whether the Message Batch ``item`` is ``entry``'s (a Message Batch has no input file
        and no metadata): an ended one by its results' custom_ids (every one of ``ids`` among
        them); one still running cannot be read, so it is not ruled out (None) when it holds as
        many requests as ``ids``, and ruled out (False) otherwise."""
        counts = item.get("request_counts") or {}
        total = sum(int(counts.get(k) or 0) for k in ("processing", "succeeded", "errored", "canceled", "expired"))
        if item.get("processing_status") == "ended" and item.get("results_url"):
            named = {line[0] for line in self.results(await self.content(str(item["results_url"])))}
            return set(ids) <= named
        return None if total == len(ids) else False

    async def search(self, entry: dict[str, Any], ids: list[str]) -> tuple[dict[str, Any] | None, str | None]:
        """As ``OpenAIBatches.search``, over ``GET /v1/messages/batches``; a batch found is
        returned in OpenAI's shape (``_shaped``)."""
        found, doubt = await super().search(entry, ids)
        return (self._shaped(found) if found is not None else None), doubt

    async def content(self, file_id: str) -> bytes:
        """The results at ``file_id`` (the batch's ``results_url``)."""
        url = file_id if "://" in file_id else self.base + file_id
        return await self._http("GET", "", raw=True, absolute=url)

    @staticmethod
    def _shaped(batch: dict[str, Any]) -> dict[str, Any]:
        """A Message Batch with OpenAI's fields beside its own: ``status`` (completed once
        ended, cancelling while canceling), ``request_counts`` and ``output_file_id``."""
        counts = batch.get("request_counts") or {}
        total = sum(int(counts.get(k) or 0) for k in ("processing", "succeeded", "errored", "canceled", "expired"))
        status = {"ended": "completed", "canceling": "cancelling"}.get(str(batch.get("processing_status")), "in_progress")
        return {**batch, "status": status, "output_file_id": batch.get("results_url"), "error_file_id": None,
                "request_counts": {"total": total, "completed": int(counts.get("succeeded") or 0),
                                   "failed": sum(int(counts.get(k) or 0) for k in ("errored", "canceled", "expired"))}}

    def reply(self, body: Any) -> Reply:
        """A collected Message as a ``Reply``: its text blocks joined, ``length`` for a reply cut
        at max_tokens, its usage at the batch price."""
        counts = body.get("usage") or {}
        prompt, completion = int(counts.get("input_tokens") or 0), int(counts.get("output_tokens") or 0)
        return Reply(
            text=base.message_text(body.get("content")),
            finish_reason="length" if body.get("stop_reason") == "max_tokens" else "stop",
            usage=Usage(prompt, completion, prices.cost("anthropic", [body.get("model"), self.name], prompt, completion, batch=True), 1,
                        estimated=prompt <= 0),
            batch=True,
        )

    @staticmethod
    def results(raw: bytes) -> list[tuple[str, Any, str | None, bool]]:
        """The results' lines as (custom_id, message or None, error or None, final): errored
        with an ``invalid_request_error`` is final (sent again it would fail again)."""
        out: list[tuple[str, Any, str | None, bool]] = []
        for text in raw.splitlines():
            if not text.strip():
                continue
            line = loads(text)
            cid, result = line.get("custom_id"), line.get("result") or {}
            kind = result.get("type")
            if cid is None:
                continue
            if kind == "succeeded":
                out.append((cid, result.get("message") or {}, None, False))
            elif kind == "errored":
                error = (result.get("error") or {}).get("error") or result.get("error") or {}
                out.append((cid, None, f"{error.get('type') or 'error'}: {error.get('message') or 'no message'}",
                            error.get("type") == "invalid_request_error"))
            else:
                out.append((cid, None, f"{kind or 'unknown result'}: the batch did not run this request", False))
        return out
