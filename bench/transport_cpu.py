"""Figure 1b: client CPU per chat-completion call, for each transport.

N calls at concurrency C against the fake server (its own process, fixed latency), the same
request each time (a judge prompt with a ``json_schema`` response format), measured in the
client process (calls/s and CPU milliseconds per call):

- ``litellm.acompletion`` alone (no ragjudge code on the path);
- ragjudge's ``litellm`` transport, then its aiohttp transport (``--transport auto``), each
  through ``Transport.complete``;
- the whole ragjudge path for one row's call (``Model.call``: cache off, limit, retry
  wrapper, transport, parsing the verdict), for each transport.

At C = 64 and 100 ms latency the limit is 640 calls/s, which needs well under
1000 / 640 = 1.6 ms of CPU per call with the fake server sharing the machine.

    python bench/transport_cpu.py [--calls 2000] [--concurrency 64] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import replace

from _common import fake_server, machine

ROW = {"id": "r1", "request": "Where is landmark 1?", "context": ["Landmark 1 stands in city 1."], "expected_response": "city 1"}


def _call_and_judge():
    from ragjudge.config import read_raw_config as load_config  # the config as read, untyped
    from ragjudge.judges import make_judges
    from ragjudge.records import Columns, resolve_mapping, to_records

    config = load_config(None, {"metrics": ["sufficiency"], "judge": {"model": "openai/fake-judge"}})
    judge = make_judges(config)[0]
    record = to_records([ROW], resolve_mapping(list(ROW), [ROW], Columns()))[0]
    return judge, judge.prepare(record)


async def timed(work, calls: int, concurrency: int) -> tuple[float, float]:
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await work(i)

    await asyncio.gather(*(one(i) for i in range(min(50, calls))))  # warm-up: sessions, lazy imports
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(calls)))
    return calls / (time.perf_counter() - wall), 1000 * (time.process_time() - cpu) / calls


async def measure(kind: str, url: str, calls: int, concurrency: int) -> tuple[float, float]:
    from ragjudge.config import JudgeSettings
    from ragjudge.transports.base import Request

    judge, call = _call_and_judge()
    settings = JudgeSettings(model="openai/fake-judge", api_base=url, transport="litellm" if "litellm" in kind else "auto", concurrency=concurrency)
    request = Request(messages=call.messages, temperature=0.0, max_tokens=1024, response_format=call.response_format, timeout=120)
    if kind == "litellm.acompletion":
        from ragjudge.transports.litellm import import_litellm

        litellm = import_litellm()

        async def work(i: int) -> None:
            await litellm.acompletion(model="openai/fake-judge", api_base=url, api_key="sk-bench-not-a-key", messages=call.messages,
                                      temperature=0.0, max_tokens=1024, response_format=call.response_format, timeout=120, max_retries=0)
        return await timed(work, calls, concurrency)
    if kind.startswith("transport"):
        from ragjudge.transports import choose

        transport = choose(settings)

        async def work(i: int) -> None:
            await transport.complete(request)
        try:
            return await timed(work, calls, concurrency)
        finally:
            await transport.aclose()
    from ragjudge.model import Model

    model = Model(settings)

    prompt = call.messages[-1]["content"]

    async def work(i: int) -> None:  # a distinct call each time, so nothing is shared or remembered
        messages = [call.messages[0], {"role": "user", "content": f"{prompt}\n(call {i})"}]
        verdict = await model.call(replace(call, messages=messages), judge.parse)
        assert verdict.status == "ok", verdict.error
    try:
        return await timed(work, calls, concurrency)
    finally:
        await model.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    print(f"machine: {machine()}; {args.calls} calls, concurrency {args.concurrency}, fake server latency {args.latency * 1000:.0f} ms "
          f"(limit {args.concurrency / args.latency:.0f} calls/s)")
    with fake_server(args.latency) as url:
        for kind in ("litellm.acompletion", "transport litellm", "transport auto (aiohttp)", "Model.call, litellm", "Model.call, auto (aiohttp)"):
            rate, cpu_ms = asyncio.run(measure(kind, url, args.calls, args.concurrency))
            print(f"[1b] {kind}: {rate:.0f} calls/s, {cpu_ms:.2f} ms of client CPU per call", flush=True)


if __name__ == "__main__":
    main()
