"""The fake server's batch APIs (``ragjudge.fakes.server.FakeJudgeServer`` is a ``FakeBatches``):
OpenAI's Batch API (``/v1/files``, ``/v1/batches``; Azure OpenAI's is the same) and Anthropic's
Message Batches (``/v1/messages/batches``), with the knobs the server's docstring lists (lost,
refused and rate-limited creates, 404s right after a create, failed, expired and shuffled lines,
listings a page at a time, other processes' batches). A test double: its replies are the fake
judge's rule, never quality figures.
"""

from __future__ import annotations

import json
import time
from typing import Any


class FakeBatches:
    """The batch endpoints of ``FakeJudgeServer``, as a mixin: the state (``files``, ``batches``,
    the knobs and counters) is the server's, set in its ``__init__``; ``_error`` and
    ``_completion`` are the server's too."""

    # -- the Batch API ---------------------------------------------------------------
    async def _upload(self, request):
        from aiohttp import web

        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or upload is None:
            return self._error(web, 400, "invalid_request_error", "purpose must be batch, with a file")
        data = upload.file.read() if hasattr(upload, "file") else bytes(upload)
        file_id = f"file-fake-{len(self.files) + 1}"
        self.files[file_id] = data
        return web.json_response({"id": file_id, "object": "file", "bytes": len(data), "purpose": "batch"})

    async def _content(self, request):
        from aiohttp import web

        data = self.files.get(request.match_info["file_id"])
        if data is None:
            return self._error(web, 404, "not_found", "No such file")
        return web.Response(body=data, content_type="application/octet-stream")

    async def _create_batch(self, request):
        from aiohttp import web

        self.batch_creates += 1
        body = await request.json()
        if self.batch_429 > 0:
            self.batch_429 -= 1
            return self._error(web, 429, "rate_limit_exceeded", "Too many batches being created.", retry=True)
        data = self.files.get(body.get("input_file_id"))
        if data is None:
            return self._error(web, 400, "invalid_request_error", "input_file_id not found")
        if self.batch_refused_creates > 0:
            self.batch_refused_creates -= 1
            return self._lost(web)
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        batch = self._make_batch(lines, body["input_file_id"], body.get("endpoint"), body.get("metadata"))
        if self.batch_lost_creates > 0:
            self.batch_lost_creates -= 1
            return self._lost(web)
        return web.json_response(batch)

    def _lost(self, web):
        """The answer of a create that was lost on its way back (or refused): ``batch_lost_status``."""
        if self.batch_lost_status == 504:
            self.statuses[504] += 1
            return web.Response(status=504, text="<html><body><h1>504 Gateway Time-out</h1></body></html>", content_type="text/html")
        return self._error(web, self.batch_lost_status, "server_error", "The server had an error while creating the batch.")

    def _make_batch(self, lines: list[dict[str, Any]], input_file_id: str | None, endpoint: Any = None, metadata: Any = None,
                    anthropic: bool = False) -> dict[str, Any]:
        """Record a batch of ``lines`` (OpenAI's object, or with ``anthropic`` a Message Batch) and return its object."""
        from datetime import datetime, timezone

        for line in lines:
            self.batch_submitted[line["custom_id"]] += 1
        number = len(self.batches) + 1
        if anthropic:
            batch = {"id": f"msgbatch_fake_{number}", "type": "message_batch", "processing_status": "in_progress", "results_url": None,
                     "created_at": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
                     "request_counts": {"processing": len(lines), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}}
        else:
            batch = {"id": f"batch_fake_{number}", "object": "batch", "endpoint": endpoint, "input_file_id": input_file_id,
                     "completion_window": "24h", "status": "validating", "output_file_id": None, "created_at": int(time.time()),
                     "error_file_id": None, "errors": None, "metadata": metadata,
                     "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
        self.batches[batch["id"]] = {"object": batch, "lines": lines, "polls": 0, "fail": self.batch_failures > 0 and not anthropic,
                                     "anthropic": anthropic, "hidden": self.batch_not_found_polls}
        if self.batch_failures > 0 and not anthropic:
            self.batch_failures -= 1
        return batch

    def foreign_batches(self, count: int, size: int = 3, anthropic: bool = False) -> None:
        """Make ``count`` batches of ``size`` lines each, as another process on the same account
        would (their custom_ids ``other-N-I``; each counted in ``batch_submitted``)."""
        for n in range(count):
            lines = [{"custom_id": f"other-{len(self.batches)}-{i}", "method": "POST", "url": "/v1/chat/completions",
                      "body": {"model": "fake", "messages": [{"role": "user", "content": f"other {n} {i}"}]},
                      "params": {"model": "fake", "max_tokens": 16, "messages": [{"role": "user", "content": f"other {n} {i}"}]}}
                     for i in range(size)]
            self._make_batch(lines, f"file-other-{len(self.batches)}", "/v1/chat/completions", anthropic=anthropic)

    def end_batches(self) -> None:
        """End every batch still running, as the provider does in time (each answered as a poll past ``batch_polls`` answers it)."""
        for entry in self.batches.values():
            entry["polls"] = max(entry["polls"], self.batch_polls) + 1
            if entry["anthropic"]:
                self._end_message_batch(entry)
            elif entry["object"]["status"] in ("validating", "in_progress"):
                self._finish_batch(entry)

    def _polled(self, web, request, not_found: str) -> tuple[dict[str, Any] | None, Any]:
        """The batch the request names, its poll counted; or None and the 404 (``not_found``: the
        protocol's error code) to answer with."""
        entry = self.batches.get(request.match_info["batch_id"])
        if entry is not None and entry.get("hidden", 0) > 0:  # just created: not yet seen by the read side (batch_not_found_polls)
            entry["hidden"] -= 1
            entry = None
        if entry is None:
            return None, self._error(web, 404, not_found, "No such batch")
        entry["polls"] += 1
        return entry, None

    async def _get_batch(self, request):
        from aiohttp import web

        entry, missing = self._polled(web, request, "not_found")
        if entry is None:
            return missing
        batch = entry["object"]
        if batch["status"] in ("validating", "in_progress"):
            if entry["polls"] > self.batch_polls:
                self._finish_batch(entry)
            else:
                batch["status"] = "in_progress"
                done = len(entry["lines"]) * entry["polls"] // (self.batch_polls + 1)
                batch["request_counts"]["completed"] = done
        return web.json_response(batch)

    def _listing(self, request, anthropic: bool, cursor: str) -> dict[str, Any]:
        """One page of the batches of one protocol, newest first: at most ``limit`` (and
        ``batch_list_page``), after the batch the ``cursor`` parameter names."""
        self.batch_lists += 1
        limit = min(int(request.query.get("limit", "20")), self.batch_list_page)
        newest = [entry["object"] for entry in reversed(list(self.batches.values())) if entry["anthropic"] == anthropic]
        after = request.query.get(cursor)
        if after is not None:
            ids = [batch["id"] for batch in newest]
            newest = newest[ids.index(after) + 1:] if after in ids else []
        page = newest[:limit]
        return {"data": page, "has_more": len(newest) > limit, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None}

    async def _list_batches(self, request):
        from aiohttp import web

        return web.json_response({"object": "list", **self._listing(request, False, "after")})

    async def _list_message_batches(self, request):
        from aiohttp import web

        if request.headers.get("anthropic-version") is None or not request.headers.get("x-api-key"):
            return web.json_response({"type": "error", "error": {"type": "authentication_error", "message": "x-api-key and "
                                                                  "anthropic-version are required"}}, status=401)
        return web.json_response(self._listing(request, True, "after_id"))

    def _finish_batch(self, entry: dict[str, Any]) -> None:
        """Answer a batch's lines: a failed batch answers none; otherwise the first
        ``batch_line_errors`` lines (across batches) get a 500, the last ``batch_expire`` expire, the others a completion."""
        batch, lines = entry["object"], entry["lines"]
        if entry["fail"]:
            batch["status"] = "failed"
            batch["errors"] = {"object": "list", "data": [{"code": "invalid_request", "message": "The request body is malformed.",
                                                           "param": "body", "line": i + 1} for i in range(min(2, len(lines)))]}
            return
        out, errors = [], []
        for position, name, kind, completion in self._outcomes(lines, lambda line: line["body"]):
            if kind == "expired":
                errors.append({"id": f"batch_req_{position}", "custom_id": name, "response": None,
                               "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}})
            elif kind == "rejected":
                errors.append({"id": f"batch_req_{position}", "custom_id": name, "error": None,
                               "response": {"status_code": 400, "request_id": f"req_{position}",
                                            "body": {"error": {"message": self.reject_message, "type": "invalid_request_error"}}}})
            elif kind == "error":
                errors.append({"id": f"batch_req_{position}", "custom_id": name, "error": None,
                               "response": {"status_code": 500, "request_id": f"req_{position}",
                                            "body": {"error": {"message": "The server had an error.", "type": "server_error"}}}})
            else:
                out.append({"id": f"batch_req_{position}", "custom_id": name, "error": None,
                            "response": {"status_code": 200, "request_id": f"req_{position}", "body": completion}})
        if self.batch_shuffle:
            out.reverse()
        counts = batch["request_counts"]
        counts["completed"], counts["failed"] = len(out), len(errors)
        for kind, items in (("output_file_id", out), ("error_file_id", errors)):
            if items:
                file_id = f"file-fake-{len(self.files) + 1}"
                self.files[file_id] = b"".join(json.dumps(item).encode() + b"\n" for item in items)
                batch[kind] = file_id
        batch["status"] = "expired" if self.batch_expire and lines else "completed"

    def _outcomes(self, lines: list[dict[str, Any]], body_of: Any) -> list[tuple[int, str, str, Any]]:
        """Each line's fate when its batch ends: (position, custom_id, "ok" | "error" | "expired" |
        "rejected", the chat completion of an ok line): the last ``batch_expire`` lines expire, a
        line with ``response_format`` is rejected (a 400) under ``reject_response_format``, the
        next ``batch_line_errors`` lines answered get an error, the others the rule's reply."""
        out = []
        expire_from = len(lines) - self.batch_expire
        for position, line in enumerate(lines):
            if position >= expire_from:
                out.append((position, line["custom_id"], "expired", None))
            elif self.reject_response_format and body_of(line).get("response_format"):
                out.append((position, line["custom_id"], "rejected", None))
            elif self.batch_line_errors > 0:
                self.batch_line_errors -= 1
                out.append((position, line["custom_id"], "error", None))
            else:
                self.batch_answered += 1
                out.append((position, line["custom_id"], "ok", self._completion(body_of(line), 10**6 + self.batch_answered)))
        return out

    # -- Anthropic's Message Batches ----------------------------------------------------
    async def _create_message_batch(self, request):
        from aiohttp import web

        self.batch_creates += 1
        if request.headers.get("anthropic-version") is None or not request.headers.get("x-api-key"):
            return web.json_response({"type": "error", "error": {"type": "authentication_error", "message": "x-api-key and "
                                                                  "anthropic-version are required"}}, status=401)
        if self.batch_429 > 0:
            self.batch_429 -= 1
            return self._error(web, 429, "rate_limit_error", "Too many batches being created.", retry=True)
        body = await request.json()
        if self.batch_refused_creates > 0:
            self.batch_refused_creates -= 1
            return self._lost(web)
        batch = self._make_batch(body.get("requests") or [], None, anthropic=True)
        if self.batch_lost_creates > 0:
            self.batch_lost_creates -= 1
            return self._lost(web)
        return web.json_response(batch)

    async def _get_message_batch(self, request):
        from aiohttp import web

        entry, missing = self._polled(web, request, "not_found_error")
        if entry is None:
            return missing
        if entry["polls"] > self.batch_polls:
            self._end_message_batch(entry)
        return web.json_response(entry["object"])

    def _end_message_batch(self, entry: dict[str, Any]) -> None:
        """End a Message Batch still in progress: its results written, its counts and ``results_url`` set."""
        batch = entry["object"]
        if batch["processing_status"] == "in_progress":
            results = []
            counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}

            def chat(line: dict[str, Any]) -> dict[str, Any]:
                params = line["params"]
                system = [{"role": "system", "content": params["system"]}] if params.get("system") else []
                return {"model": params.get("model"), "max_tokens": params.get("max_tokens"), "messages": system + params["messages"]}

            for _, name, kind, completion in self._outcomes(entry["lines"], chat):
                if kind == "ok":
                    choice, usage = completion["choices"][0], completion.get("usage") or {}
                    message = {"id": f"msg_{name[:12]}", "type": "message", "role": "assistant", "model": completion["model"],
                               "content": [{"type": "text", "text": choice["message"]["content"]}],
                               "stop_reason": "max_tokens" if choice["finish_reason"] == "length" else "end_turn",
                               "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)}}
                    results.append({"custom_id": name, "result": {"type": "succeeded", "message": message}})
                    counts["succeeded"] += 1
                elif kind == "error":
                    results.append({"custom_id": name, "result": {"type": "errored", "error": {"type": "error", "error": {
                        "type": "api_error", "message": "Internal server error"}}}})
                    counts["errored"] += 1
                else:
                    results.append({"custom_id": name, "result": {"type": "expired"}})
                    counts["expired"] += 1
            if self.batch_shuffle:
                results.reverse()
            self.files[batch["id"] + "/results"] = b"".join(json.dumps(item).encode() + b"\n" for item in results)
            batch.update(processing_status="ended", request_counts=counts,
                         results_url=f"{self.url[:-3]}/v1/messages/batches/{batch['id']}/results")

    async def _message_batch_results(self, request):
        from aiohttp import web

        data = self.files.get(request.match_info["batch_id"] + "/results")
        if data is None:
            return self._error(web, 404, "not_found_error", "No results yet")
        return web.Response(body=data, content_type="application/x-jsonl")
