"""A local fake OpenAI-compatible chat server for tests, benchmarks and offline trials (with
OpenAI's and Anthropic's batch APIs, ``ragjudge.fakes.batches``, and the decision-model APIs of
OpenAI and System One, ``ragjudge.fakes.decisions``).

It answers ``POST /v1/chat/completions`` with a judge reply computed by a crude, visible
rule (word overlap; see ``heuristic_reply``), after a fixed ``latency`` in seconds, and can
inject failures: a share of 429s and 500s (with ``Retry-After``), authentication errors,
hanging calls, truncated replies, or a queue of scripted replies. It is a test double, not
a judge: never use its verdicts as quality figures.

    with FakeJudgeServer(latency=0.1) as server:
        ragjudge score data.jsonl --model openai/fake --api-base server.url

``python -m ragjudge.fakeserver --port 8000 --latency 0.1`` runs it in the foreground (``ragjudge.fakeserver``
keeps the name the tests, bench/ and the README start it by).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import Counter, deque
from typing import Any

from ragjudge.fakes.batches import FakeBatches
from ragjudge.fakes.decisions import FakeDecisions
from ragjudge.transports.fake_rule import _items, _section, _words, fake_logprobs, fault_of, heuristic_reply  # noqa: F401 (the rule lives beside the in-process fake)


# The fake judge in-process, as a transport: ragjudge.transports.fake (the unit tier's model),
# re-exported here where tests and benchmarks have found it.
from ragjudge.transports.fake import FakeTransport  # noqa: E402,F401


class FakeJudgeServer(FakeBatches, FakeDecisions):
    """Run the fake server in a background thread; ``url`` is its OpenAI base URL.

    Attributes may be changed while it runs: ``latency`` (s), ``rate_429``, ``rate_500``
    (shares 0..1, drawn from ``seed``; one request body fails at most
    ``max_failures_per_request`` times, as transient faults do), ``retry_after`` (s, sent with 429/500),
    ``auth_error`` (every call 401), ``hang_first`` (that many calls sleep ``hang_seconds``),
    ``truncate`` (finish_reason 'length'), ``garbage`` (that many 200s whose body is not JSON),
    ``reject_response_format`` (a 400 for a request with ``response_format``), ``retry_header``
    (the header that says how long to wait: ``Retry-After`` in seconds, ``http-date``, or
    ``retry-after-ms`` / ``x-ms-retry-after-ms`` as Azure sends), ``echo_key`` (a 400 quoting
    the whole key), ``p_yes`` (the probability of "yes" at the
    verdict token when log-probabilities are asked for; ``p_true`` likewise at each fact's
    "supported"), ``replies`` (a queue of raw reply texts served
    first), ``errors`` (a queue of scripted error replies served before anything else, each
    ``(status, code, message, headers)``), ``usage`` (False: replies carry no ``usage``
    object, as some servers send), ``reasoning_only`` (that many replies whose ``content`` is
    null and whose ``reasoning_field``, ``reasoning_content`` or ``reasoning``, holds text,
    cut at max_tokens, as a reasoning model's that spent its tokens thinking), ``overloaded_for``
    (seconds after its first request during which every request gets a 429 with ``retry_after``
    in ``retry_header``, as an overloaded server answers), ``model_faults`` (per model name as the
    request names it: (calls answered first, then faults in turn, the last repeated: ``"401"`` an
    authentication error, ``"timeout"`` a call that hangs ``hang_seconds``), so that one member
    of a panel fails mid-run). Verdicts lean as the request's model name says
    (``fake_rule.leaning``: a name with ``lenient`` says yes more often, one with ``strict`` less). A reply longer than the request's
    ``max_tokens`` (4 characters a token) is cut there, finish_reason 'length'; a queued reply
    that is not text (a list of parts, say) is sent as the message's ``content`` as it is.
    ``calls`` counts every request; ``statuses`` counts replies by HTTP status;
    ``max_in_flight`` is the most requests it held at once; ``arrivals`` the time.monotonic() of each request,
    ``replied`` of each reply (both also served as JSON at ``GET /v1/stats``).

    The Batch API (OpenAI's protocol; Azure OpenAI's is the same): ``POST /v1/files`` (purpose
    batch), ``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET /v1/batches/{id}`` and
    ``GET /v1/batches``. A batch's lines are answered as chat calls are (the rule, or the queued
    ``replies``) when it is polled. Knobs: ``batch_polls`` (a batch is in_progress for that many
    polls), ``batch_line_errors`` (the next N lines answered get a 500 in the error file),
    ``batch_expire`` (its last N lines expire, the batch ends "expired"), ``batch_failures`` (the
    next N batches fail whole, with line errors in ``errors``), ``batch_shuffle`` (output lines
    in reverse order), ``batch_429`` (the next N creates get a 429), ``batch_lost_creates`` (the
    next N creates make the batch but answer ``batch_lost_status``, 500 by default; 504 as a
    gateway that timed out), ``batch_refused_creates`` (the next N creates answer
    ``batch_lost_status`` and make nothing), ``batch_not_found_polls`` (a batch just created answers
    404 to its first N polls, as a provider whose read side lags its write side),
    ``batch_list_page`` (the most batches one page of a listing holds). ``foreign_batches(n,
    size)`` makes n batches of ``size`` lines as another process on the same account would.
    ``batch_submitted`` counts each custom_id submitted, ``batch_answered`` the lines answered,
    ``batch_creates`` the creates received, ``batch_lists`` the listing pages served. The listing,
    ``GET /v1/batches`` (``limit``, ``after``: newest first, ``has_more``, ``last_id``), gives each
    batch's ``created_at`` (Unix seconds). Anthropic's Message Batches likewise: ``POST
    /v1/messages/batches`` (requests inline, the ``x-api-key`` and ``anthropic-version`` headers
    required), ``GET /v1/messages/batches`` (``limit``, ``after_id``; ``created_at`` in RFC 3339),
    ``GET /v1/messages/batches/{id}`` and its ``/results``, with the same knobs (an error line is an
    ``api_error``; no batch fails whole).

    Decision models (``FakeDecisions``, ``ragjudge.fakedecisions``, where its knobs are listed):
    OpenAI's Decisions API, ``POST /v1/decisions``, and the System One API of Jev and Solar
    Decide, ``POST /v1/systemone`` and ``GET /v1/models``.
    """

    def __init__(self, latency: float = 0.0, rate_429: float = 0.0, rate_500: float = 0.0, retry_after: float = 0.01,
                 seed: int = 7, port: int = 0) -> None:
        self.latency = latency
        self.rate_429 = rate_429
        self.rate_500 = rate_500
        self.retry_after = retry_after
        self.auth_error = False
        self.quota_error = False
        self.hang_first = 0
        self.hang_seconds = 30.0
        self.garbage = 0  # the first N requests get a 200 whose body is not JSON
        self.reject_response_format = False  # a 400 for any request with response_format
        self.reject_message = "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."
        self.retry_header = "Retry-After"  # or retry-after-ms / x-ms-retry-after-ms (milliseconds), or "http-date"
        self.echo_key = False  # a 400 whose message holds the request's whole API key
        self.truncate = False
        self.p_yes = 0.8
        self.p_true = 0.9
        self.p_scores: dict[int, float] | None = None  # completeness: P(score) at the score token
        self.replies: deque[str] = deque()
        self.errors: deque[tuple[int, str, str, dict[str, str]]] = deque()
        self.usage = True
        self.reasoning_only = 0
        self.reasoning_field = "reasoning_content"
        self.overloaded_for = 0.0
        self.model_faults: dict[str, tuple[int, list[str]]] = {}
        self.model_calls: Counter[str] = Counter()  # requests per model name
        self.calls = 0
        self.arrivals: list[float] = []  # time.monotonic() of each request
        self.replied: list[float] = []  # time.monotonic() of each reply (any status), as it is sent
        self.in_flight = 0
        self.max_in_flight = 0
        self.statuses: Counter[int] = Counter()
        self.requests: list[dict[str, Any]] = []
        self.keep_requests = False
        self.max_failures_per_request = 3
        # the Batch API (OpenAI's protocol: /v1/files, /v1/batches): see ``FakeBatches`` in the class docstring
        self.batch_polls = 0  # a batch reports in_progress to this many GETs, then is done
        self.batch_line_errors = 0  # this many lines (the next answered) get a 500 in the error file instead
        self.batch_expire = 0  # each batch: this many lines (the last) expire; the batch ends "expired"
        self.batch_failures = 0  # this many batches (the next) fail validation whole: status "failed" with line errors
        self.batch_shuffle = False  # output lines in another order than the input (reversed)
        self.batch_429 = 0  # this many creates (the next) answer 429 with Retry-After
        self.batch_lost_creates = 0  # this many creates (the next) make the batch, then answer 500 (its id never reaches the client)
        self.batch_lost_status = 500  # the status of a lost or refused create (504: a gateway's timeout)
        self.batch_refused_creates = 0  # this many creates (the next) answer batch_lost_status and make nothing
        self.batch_not_found_polls = 0  # a batch just created answers 404 to this many polls first
        self.batch_list_page = 100  # the most batches one page of a listing holds (and the default limit: 20, as the providers')
        self.batch_lists = 0  # listing pages served
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batch_submitted: Counter[str] = Counter()  # custom_id -> times submitted in a batch
        self.batch_answered = 0  # lines answered with a completion
        self.batch_creates = 0  # POST /v1/batches received (429s included)
        self._init_decisions()  # the decision-model endpoints' knobs (ragjudge.fakedecisions)
        self._failures: Counter[int] = Counter()
        self._random = random.Random(seed)
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner = None
        self._thread: threading.Thread | None = None
        self.url = ""

    async def _chat(self, request):

        self.calls += 1
        self.arrivals.append(time.monotonic())
        number = self.calls
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request, number)
        finally:
            self.in_flight -= 1
            self.replied.append(time.monotonic())

    async def _stats(self, request):
        """``GET /v1/stats``: ``calls``, and the ``arrivals`` and ``replied`` times
        (``time.monotonic()``, seconds: on Linux one clock for every process of the machine), for
        a benchmark's timeline (bench/client_cpu.py)."""
        from aiohttp import web

        return web.json_response({"calls": self.calls, "arrivals": self.arrivals, "replied": self.replied})

    async def _answer(self, request, number: int):
        from aiohttp import web

        body = await request.json()
        if self.keep_requests:
            self.requests.append(body)
        if self.errors:
            status, code, message, headers = self.errors.popleft()
            self.statuses[status] += 1
            return web.json_response({"error": {"message": message, "type": code, "code": code}}, status=status, headers=headers)
        if self.overloaded_for and time.monotonic() - self.arrivals[0] < self.overloaded_for:
            return self._error(web, 429, "rate_limit_exceeded", "The server is overloaded.", retry=True)
        if self.echo_key:
            key = request.headers.get("Authorization", "").removeprefix("Bearer ")
            return self._error(web, 400, "invalid_request_error", f"Bad request from key {key}: temperature out of range.")
        if self.auth_error:
            return self._error(web, 401, "invalid_api_key", "Incorrect API key provided: sk-te****1234.")
        if self.reject_response_format and body.get("response_format"):
            return self._error(web, 400, "invalid_request_error", self.reject_message)
        if number <= self.garbage:
            self.statuses[200] += 1
            return web.Response(status=200, text="<html><body>502 Bad Gateway</body></html>", content_type="text/html")
        if self.quota_error:
            return self._error(web, 429, "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.")
        if number <= self.hang_first:
            await asyncio.sleep(self.hang_seconds)
        model = str(body.get("model", ""))
        fault = fault_of(self.model_faults, model, self.model_calls[model])
        self.model_calls[model] += 1
        if fault == "401":
            return self._error(web, 401, "invalid_api_key", "Incorrect API key provided: sk-te****1234.")
        if fault == "timeout":
            await asyncio.sleep(self.hang_seconds)
        draw = self._random.random()
        if self.latency:
            await asyncio.sleep(self.latency)
        key = hash(json.dumps(body.get("messages"), sort_keys=True))
        if self._failures[key] >= self.max_failures_per_request:
            draw = 1.0  # transient faults: the same request never fails more than this many times
        elif draw < self.rate_429 + self.rate_500:
            self._failures[key] += 1
        if draw < self.rate_429:
            return self._error(web, 429, "rate_limit_exceeded", "Rate limit reached.", retry=True)
        if draw < self.rate_429 + self.rate_500:
            return self._error(web, 500, "server_error", "The server had an error.", retry=True)
        self.statuses[200] += 1
        return web.json_response(self._completion(body, number))

    def _completion(self, body: dict[str, Any], number: int) -> dict[str, Any]:
        """The chat completion answering ``body`` (the rule's verdict, or the next queued reply)."""
        response_format = body.get("response_format") or {}
        schema = response_format.get("json_schema") or {}
        model = str(body.get("model", ""))
        content = self.replies.popleft() if self.replies else json.dumps(heuristic_reply(body["messages"], schema.get("name"), schema.get("schema"), model))
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body["messages"])
        logprobs = self._logprobs(content) if body.get("logprobs") and isinstance(content, str) else None
        limit = int(body.get("max_tokens") or body.get("max_completion_tokens") or 10**9)
        cut = isinstance(content, str) and len(content) // 4 > limit  # a reply longer than max_tokens is cut there, as a provider cuts it
        content = content[:limit * 4] if cut else content
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = "length" if self.truncate or cut else "stop"
        if self.reasoning_only > 0:
            self.reasoning_only -= 1
            message = {"role": "assistant", "content": None,
                       self.reasoning_field: "Let me weigh each passage against the request before I answer. " * 8}
            finish, logprobs = "length", None
        reply: dict[str, Any] = {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish}],
        }
        if self.usage:
            size = len(content if isinstance(content, str) else json.dumps(content))
            reply["usage"] = {"prompt_tokens": prompt_chars // 4, "completion_tokens": size // 4, "total_tokens": prompt_chars // 4 + size // 4}
        return reply

    def _logprobs(self, content: str) -> dict[str, Any]:
        return fake_logprobs(content, self.p_yes, self.p_true, self.p_scores)

    def _error(self, web, status: int, code: str, message: str, retry: bool = False):
        self.statuses[status] += 1
        headers = {}
        if retry and self.retry_header == "http-date":
            from email.utils import formatdate

            headers = {"Retry-After": formatdate(time.time() + self.retry_after, usegmt=True)}
        elif retry and self.retry_header.endswith("-ms"):
            headers = {self.retry_header: f"{self.retry_after * 1000:g}"}
        elif retry:
            headers = {self.retry_header: f"{self.retry_after:g}"}
        kind = {401: "invalid_request_error", 429: "rate_limit_error" if code != "insufficient_quota" else "insufficient_quota"}.get(status, "server_error")
        return web.json_response({"error": {"message": message, "type": kind, "code": code}}, status=status, headers=headers)

    def _app(self):
        from aiohttp import web

        app = web.Application(client_max_size=64 * 2**20)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{file_id}/content", self._content)
        app.router.add_post("/v1/batches", self._create_batch)
        app.router.add_get("/v1/batches", self._list_batches)
        app.router.add_get("/v1/batches/{batch_id}", self._get_batch)
        app.router.add_post("/v1/messages/batches", self._create_message_batch)
        app.router.add_get("/v1/messages/batches", self._list_message_batches)
        app.router.add_get("/v1/messages/batches/{batch_id}", self._get_message_batch)
        app.router.add_get("/v1/messages/batches/{batch_id}/results", self._message_batch_results)
        app.router.add_get("/v1/stats", self._stats)
        self._decision_routes(app)
        return app

    async def _start(self) -> None:
        from aiohttp import web

        self._runner = web.AppRunner(self._app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}/v1"

    def start(self) -> "FakeJudgeServer":
        """Start serving on a thread; returns once listening. Raises what binding raised
        (``OSError``, e.g. errno 98 for a port in use), however long the start took."""
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._start())
            except BaseException as err:  # noqa: BLE001 - handed to the caller of start()
                failed.append(err)
                loop.close()
                ready.set()
                return
            self._loop = loop
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True, name="fake-judge-server")
        self._thread.start()
        while not ready.wait(0.2) and self._thread.is_alive():  # a loaded machine may take long: wait for the outcome
            pass
        if failed:
            raise failed[0]
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        async def shutdown() -> None:
            current = asyncio.current_task()
            pending = [t for t in asyncio.all_tasks() if t is not current]
            for task in pending:  # hung handlers (hang_first) must not outlive the server
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            await self._runner.cleanup()  # type: ignore[union-attr]

        future = asyncio.run_coroutine_threadsafe(shutdown(), self._loop)
        try:
            future.result(10)
        except Exception:
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread:
            self._thread.join(5)
        self._loop.close()
        self._loop = None

    def __enter__(self) -> "FakeJudgeServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main() -> None:
    import argparse
    import signal
    import sys
    import time

    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible judge server, with batch and decision-model APIs (tests, benchmarks).")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per call")
    parser.add_argument("--rate-429", type=float, default=0.0)
    parser.add_argument("--rate-500", type=float, default=0.0)
    args = parser.parse_args()
    try:
        server = FakeJudgeServer(latency=args.latency, rate_429=args.rate_429, rate_500=args.rate_500, port=args.port).start()
    except OSError as err:
        import errno

        why = "is already in use" if err.errno == errno.EADDRINUSE else f"cannot be listened on ({err.strerror or err})"
        print(f"fakeserver: port {args.port} on 127.0.0.1 {why}; pick a free one with --port N (--port 0 picks one)", file=sys.stderr)
        sys.exit(2)
    print(server.url, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set():
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    server.stop()
    print(f"calls: {server.calls}", file=sys.stderr)


if __name__ == "__main__":
    main()
