"""OpenAI's Batch API over aiohttp (Azure OpenAI's v1 endpoint speaks the same protocol): the
calls of a batch written as a JSON Lines file, uploaded, run within 24 hours at the batch
price, their replies read back from the output and error files.

The protocol, mapped by hand as ``openai_http`` maps chat completions:

- ``POST {api_base}/files`` (multipart: ``purpose=batch``, ``file``): the input file, one line
  a call: ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``;
- ``POST {api_base}/batches`` (``input_file_id``, ``endpoint``, ``completion_window: 24h``,
  ``metadata``) -> the batch (``id``, ``status``, ``request_counts``, ``output_file_id``,
  ``error_file_id``, ``errors``);
- ``GET {api_base}/batches/{id}``: its status (validating, in_progress, finalizing,
  completed, failed, expired, cancelling, cancelled);
- ``GET {api_base}/batches?limit=100&after=ID``: the batches, newest first, a page at a time
  (``has_more``, ``created_at`` in Unix seconds): a batch whose create got no answer (a 5xx, a
  gateway's 504, a process killed before it wrote the id down) is looked for by its input file
  back to the time its entry was written (``search``);
- ``GET {api_base}/files/{id}/content``: an output or error file, one line a call:
  ``{"custom_id", "response": {"status_code", "body"}, "error"}``.

A 429 or 5xx (and a dropped connection) is retried ``RETRIES`` times with backoff, honouring
``Retry-After``; other errors raise ``TransportError`` with the kind the chokepoint knows.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ragjudge.transports import base
from ragjudge.transports.base import OPENAI_BASE, TransportError, endpoint
from ragjudge.transports.openai_http import OpenAIHTTPTransport, _status_error, dumps, fast_model, loads, reply_of
from ragjudge.types import Reply

RETRIES = 5
BACKOFF_S = 0.5
CHAT_URL = "/v1/chat/completions"
DONE = frozenset({"completed", "failed", "expired", "cancelled"})  # a batch in one of these states changes no more
LIST_PAGES = 50  # listing pages (of 100 batches) read at most looking for a batch whose create got no answer
LIST_PAGE = 100  # batches a listing page asks for (OpenAI's and Anthropic's most)
CLOCK_SLACK_S = 900.0  # how far this machine's clock may be ahead of the provider's when the listing is read back to a time


def serves(settings: Any) -> bool:
    """Whether ``settings.model`` is an OpenAI-compatible model this client can batch (the
    models of the aiohttp fast path, ``openai_http.fast_model``)."""
    return fast_model(settings) is not None


class OpenAIBatches:
    """The Batch API of the server ``settings`` name (``judge.api_base``, else
    ``OPENAI_BASE_URL``, else OpenAI's), with the key the chat transport reads. Every method is
    a coroutine; ``aclose`` ends the HTTP session."""

    provider = "openai"

    def __init__(self, settings: Any) -> None:
        chat = OpenAIHTTPTransport(settings)
        self._chat = chat
        self.name = chat.name  # the model as the server knows it
        self.base = (endpoint(settings, chat.provider_model) or OPENAI_BASE).rstrip("/")
        self._session: Any = None

    def line(self, custom_id: str, request: base.Request) -> dict[str, Any]:
        """One line of a batch's input file: ``request`` as the chat body, named ``custom_id``."""
        return {"custom_id": custom_id, "method": "POST", "url": CHAT_URL, "body": self._chat.body(request)}

    def _headers(self) -> dict[str, str]:
        """The key and organisation headers the chat transport sends (aiohttp sets the content type)."""
        return {k: v for k, v in self._chat._headers().items() if k != "Content-Type"}

    async def _http(self, method: str, path: str, *, json: Any = None, form: Any = None, params: Any = None, raw: bool = False,
                    retry: frozenset[str] = base.RETRYABLE, absolute: str | None = None) -> Any:
        """One request to ``base + path`` (or the URL ``absolute``) with retries on the error
        kinds ``retry`` (429, 5xx and dropped connections); the body as JSON (bytes with
        ``raw``). ``form``: a function making the multipart form (made afresh for each attempt).
        Raises ``TransportError``."""
        import aiohttp

        headers = self._headers()
        if self._session is None:
            self._session = aiohttp.ClientSession()
        url = absolute or self.base + path
        delay = BACKOFF_S
        for attempt in range(RETRIES + 1):
            try:
                async with self._session.request(method, url, headers=headers, json=json, params=params,
                                                 data=form() if form is not None else None,
                                                 timeout=aiohttp.ClientTimeout(total=300)) as response:
                    body = await response.read()
                    status = response.status
                    response_headers = response.headers
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
                error = TransportError(base.DISCONNECTED, f"{method} {url}: {type(exc).__name__} {exc}".strip())
            else:
                if status == 200:
                    return body if raw else loads(body)
                error = _status_error(status, body, response_headers)
            if error.kind not in retry or attempt == RETRIES:
                raise error
            await asyncio.sleep(max(delay, error.retry_after or 0.0))
            delay = min(delay * 2, 30.0)
        raise AssertionError("unreachable")

    def holds(self, input_file_id: str) -> bool:
        """Whether a batch of ``input_file_id`` can still be created (an uploaded file: always)."""
        return True

    async def upload(self, lines: list[dict[str, Any]]) -> str:
        """Upload ``lines`` as a batch input file; returns its file id."""
        import aiohttp

        payload = b"".join(dumps(line) + b"\n" for line in lines)

        def form() -> Any:
            data = aiohttp.FormData()
            data.add_field("purpose", "batch")
            data.add_field("file", payload, filename="ragjudge-batch.jsonl", content_type="application/jsonl")
            return data

        answer = await self._http("POST", "/files", form=form)
        return str(answer["id"])

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> dict[str, Any]:
        """Create a batch of the calls in ``input_file_id``; returns the batch object. Only a 429
        is retried here: after a 5xx or a dropped connection the batch may exist (the caller looks
        for it with ``search`` before creating another)."""
        return await self._http("POST", "/batches", json={"input_file_id": input_file_id, "endpoint": CHAT_URL,
                                                          "completion_window": "24h", "metadata": metadata},
                                retry=frozenset({base.RATE_LIMIT}))

    async def get(self, batch_id: str) -> dict[str, Any]:
        """The batch object of ``batch_id`` (its ``status``, ``request_counts``, files)."""
        return await self._http("GET", f"/batches/{batch_id}")

    async def search(self, entry: dict[str, Any], ids: list[str]) -> tuple[dict[str, Any] | None, str | None]:
        """Look for the batch of ``entry`` (a manifest's batch entry: ``input_file_id``,
        ``submitted_at`` in Unix seconds, written before the upload) whose create may have been
        made without its answer reaching this process; ``ids``: the custom_ids of its calls.
        Reads the provider's listing, newest first, a page at a time (``LIST_PAGES`` at most),
        back to ``submitted_at`` less ``CLOCK_SLACK_S``. Returns ``(batch, None)`` when found;
        ``(None, None)`` when ruled out (the listing reached back past that time, or ended);
        ``(None, why)`` when it cannot be ruled out (``why``: a listed batch that may be it, or
        a listing that stopped short). Raises ``TransportError``."""
        since = float(entry.get("submitted_at") or 0.0) - CLOCK_SLACK_S
        doubt: str | None = None
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            data, more = await self._page(cursor)
            for item in data:
                if self._created(item) < since:
                    return None, doubt
                owned = await self._owns(item, entry, ids)
                if owned:
                    return item, None
                if owned is None and doubt is None:
                    doubt = (f"batch {item.get('id')} (created {item.get('created_at')}, {len(ids)} requests, like this one's) is still "
                             "running, and its requests cannot be read until it ends")
            if more and not data:  # more said to follow, none given: the listing cannot be read further back
                return None, doubt or "the provider's listing of batches stopped short of the time this batch was written down"
            if not more:
                return None, doubt
            cursor = str(data[-1].get("id"))
        from datetime import datetime, timezone

        back = datetime.fromtimestamp(since + CLOCK_SLACK_S, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return None, doubt or (f"the provider's listing of batches did not reach back to {back} within {LIST_PAGES} pages of "
                               f"{LIST_PAGE} batches")

    async def _page(self, cursor: str | None) -> tuple[list[dict[str, Any]], bool]:
        """One page of the listing, newest first, after the batch ``cursor``: (batches, has_more)."""
        params = {"limit": str(LIST_PAGE), **({"after": cursor} if cursor else {})}
        answer = await self._http("GET", "/batches", params=params)
        return list(answer.get("data") or []), bool(answer.get("has_more"))

    @staticmethod
    def _created(item: dict[str, Any]) -> float:
        """A listed batch's ``created_at`` in Unix seconds (infinity where it gives none: never older than a time)."""
        try:
            return float(item["created_at"])
        except (KeyError, TypeError, ValueError):
            return float("inf")

    async def _owns(self, item: dict[str, Any], entry: dict[str, Any], ids: list[str]) -> bool | None:
        """Whether the listed batch ``item`` is ``entry``'s: made from its input file."""
        return item.get("input_file_id") == entry.get("input_file_id")

    async def content(self, file_id: str) -> bytes:
        """The bytes of an output or error file."""
        return await self._http("GET", f"/files/{file_id}/content", raw=True)

    def reply(self, body: Any) -> Reply:
        """A collected reply's body (a chat completion) as the ``Reply`` it is, at the batch price."""
        return reply_of(body, self.name, batch=True)

    @staticmethod
    def results(raw: bytes) -> list[tuple[str, Any, str | None, bool]]:
        """An output or error file's lines as (custom_id, chat completion or None, error or None,
        final): a 200 answers its call; an error line or an expired one fails it, ``final`` for a
        4xx other than 408, 409 and 429 (sent again it would fail again)."""
        out: list[tuple[str, Any, str | None, bool]] = []
        for text in raw.splitlines():
            if not text.strip():
                continue
            line = loads(text)
            cid = line.get("custom_id")
            if cid is None:
                continue
            response = line.get("response") or {}
            status = int(response.get("status_code") or 0)
            if status == 200 and not line.get("error"):
                out.append((cid, response.get("body"), None, False))
            elif line.get("error"):
                error = line["error"]
                out.append((cid, None, f"{error.get('code') or 'error'}: {error.get('message') or 'no message'}", False))
            else:
                body = response.get("body")
                message = str(_status_error(status, dumps(body) if body is not None else b"", {}))
                out.append((cid, None, message, 400 <= status < 500 and status not in (408, 409, 429)))
        return out

    @staticmethod
    def status(batch: dict[str, Any]) -> tuple[str, int, int, int]:
        """(status, total, completed, failed) of a batch object."""
        counts = batch.get("request_counts") or {}
        return (str(batch.get("status")), int(counts.get("total") or 0), int(counts.get("completed") or 0), int(counts.get("failed") or 0))

    @staticmethod
    def files(batch: dict[str, Any]) -> list[str]:
        """The output and error files of a finished batch."""
        return [f for f in (batch.get("output_file_id"), batch.get("error_file_id")) if f]

    @staticmethod
    def batch_errors(batch: dict[str, Any]) -> str:
        """The batch's own errors (a failed batch: its input refused) as one line."""
        errors = (batch.get("errors") or {}).get("data") or []
        return "; ".join(f"{e.get('code')}: {e.get('message')}" + (f" (line {e['line']})" if e.get("line") else "") for e in errors[:3])

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()
        chat = getattr(self, "_chat", None)
        if chat is not None:
            await chat.aclose()
