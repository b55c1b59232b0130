"""The embedded offline judge as a transport: chat completions from the in-process llama.cpp
runtime (``ragjudge.local``), one prompt at a time, at no cost. No litellm involved."""

from __future__ import annotations

import asyncio
import copy
import threading
from typing import Any

from ragjudge.transports import base
from ragjudge.transports.base import Request, TransportError
from ragjudge.types import Reply, Usage
from ragjudge import local


class LocalTransport(base.Transport):
    """``settings``: ``JudgeSettings`` (``model`` ``local/NAME``, ``local_model_path``);
    ``cache_dir``: the response cache folder (an older model assembled under it is reused)."""

    free = True

    def __init__(self, settings: Any, cache_dir: str | None = None) -> None:
        self.settings = settings
        self.provider_model = settings.model  # local/NAME, as litellm's custom provider resolved it
        self.where = "the embedded judge"
        local.check_available(settings, cache_dir)
        self.path = local.configure(settings, cache_dir)

    async def complete(self, request: Request) -> Reply:
        body: dict[str, Any] = {"messages": request.messages, "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.seed is not None:
            body["seed"] = request.seed
        if request.response_format is not None:
            body["response_format"] = copy.deepcopy(request.response_format)  # shared by every row: llama.cpp may change it
        if request.logprobs:
            body["logprobs"], body["top_logprobs"] = True, 10
        reply = await _in_thread(lambda: local.RUNTIME.chat(self.path, body))
        if not isinstance(reply, dict) or "choices" not in reply:
            message = reply.get("error", reply) if isinstance(reply, dict) else reply
            raise TransportError(base.SERVER, f"embedded judge error: {message}")
        choice = reply["choices"][0]
        counts = reply.get("usage") or {}
        return Reply(
            text=(choice.get("message") or {}).get("content"),
            finish_reason=choice.get("finish_reason"),
            logprobs=choice.get("logprobs"),
            usage=Usage(int(counts.get("prompt_tokens") or 0), int(counts.get("completion_tokens") or 0), 0.0, 1,
                        estimated=not counts.get("prompt_tokens")),
        )

    async def aclose(self) -> None:
        return None


async def _in_thread(work: Any) -> Any:
    """Run ``work()`` in a daemon thread and await its result: a llama.cpp call cannot be
    aborted, and Ctrl-C must not wait for it (the default executor's threads would be joined
    at exit)."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if not future.done():
            future.set_exception(error) if error is not None else future.set_result(result)

    def run() -> None:
        try:
            result, error = work(), None
        except BaseException as exc:  # handed to the awaiting task
            result, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the event loop is gone: the run was interrupted
            pass

    threading.Thread(target=run, daemon=True, name="ragjudge-local-judge").start()
    return await future
