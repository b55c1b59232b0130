"""Why figure 1 stops short of the limit here: litellm's own CPU time per call.

Calls ``litellm.acompletion`` directly (no ragjudge code on the path) N times at
concurrency C against the fake server (its own process, fixed latency), once with a model
litellm has no price for and once with a priced one (cost look-up succeeds), and prints
calls/s and the client process's CPU milliseconds per call. At C = 64 and 100 ms latency
the limit is 640 calls/s, which needs less than 1000 / 640 = 1.6 ms of CPU per call in one
process, or twice that spread over two cores with nothing else running.

    python bench/litellm_overhead.py [--calls 2000] [--concurrency 64] [--latency 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from _common import fake_server, machine

MESSAGES = [
    {"role": "system", "content": "You are a judge."},
    {"role": "user", "content": "<request>Where is landmark 1?</request>\n<context>Landmark 1 stands in city 1.</context>"},
]


async def measure(url: str, model: str, calls: int, concurrency: int) -> tuple[float, float]:
    from ragjudge.transports.litellm import import_litellm

    litellm = import_litellm()
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            await litellm.acompletion(model=model, api_base=url, api_key="sk-bench-not-a-key", messages=MESSAGES,
                                      temperature=0.0, max_tokens=800, timeout=120, max_retries=0, num_retries=0)

    await asyncio.gather(*(one() for _ in range(min(50, calls))))  # warm-up: clients, lazy imports
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return calls / (time.perf_counter() - wall), 1000 * (time.process_time() - cpu) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    print(f"machine: {machine()}; litellm.acompletion alone, {args.calls} calls, concurrency {args.concurrency}, "
          f"fake server latency {args.latency * 1000:.0f} ms (limit {args.concurrency / args.latency:.0f} calls/s)")
    with fake_server(args.latency) as url:
        for model, note in (("openai/fake-judge", "no price"), ("openai/gpt-4o-mini", "priced")):
            rate, cpu_ms = asyncio.run(measure(url, model, args.calls, args.concurrency))
            print(f"[1b] {model} ({note}): {rate:.0f} calls/s, {cpu_ms:.2f} ms of client CPU per call")


if __name__ == "__main__":
    main()
