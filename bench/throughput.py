"""Figures 1 and 2: judge throughput against a fake server with fixed latency, and a warm-cache re-run.

N rows, one metric (sufficiency), a fake OpenAI-compatible server answering after a fixed
latency L in its own process, at concurrency C: by default C = 64 at L = 100 ms and C = 256
at L = 1 s. The physical limit is C / L calls per second. Each run is made with each
transport (``--transport auto``: ragjudge's aiohttp client; ``litellm``). Prints rows/s over
the judging phase (first call to last verdict) and end to end (read, judge, write; process
start-up excluded, see startup.py), the ratio to the limit, then the same run again from the
warm cache.

    python bench/throughput.py [--rows 5000] [--runs 64:0.1 256:1] [--transports auto litellm]
"""

from __future__ import annotations

import argparse
import shutil
import time

from _common import WORK, Timer, fake_server, machine, synthetic_rows


def run(source: str, output: str, url: str, concurrency: int, cache_dir: str, transport: str = "auto") -> dict:
    from ragjudge.config import read_raw_config as load_config  # the config as read, untyped
    from ragjudge.run import evaluate

    config = load_config(None, {
        "judge": {"model": "openai/fake-judge", "api_base": url, "concurrency": concurrency, "transport": transport},
        "metrics": ["sufficiency"],
        "cache": {"dir": cache_dir},
        "gate": {"min_pass_rate": 0.0},
    })
    marks: dict[str, float] = {}

    def started(_total):
        marks["judge_start"] = time.perf_counter()

    def progressed(_rows, _cost=None):
        marks["judge_end"] = time.perf_counter()

    with Timer() as total:
        result = evaluate(source, config, output=output, on_start=started, on_progress=progressed)
    rows = result.summary.rows
    return {
        "rows": rows,
        "ok": result.summary.metrics["sufficiency"].ok,
        "cached": result.summary.metrics["sufficiency"].cached,
        "calls": result.summary.provider_calls,
        "judge_rows_per_s": rows / (marks["judge_end"] - marks["judge_start"]),
        "end_to_end_rows_per_s": rows / total.seconds,
        "seconds": total.seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--runs", nargs="+", default=["64:0.1", "256:1"], help="CONCURRENCY:LATENCY_SECONDS pairs")
    parser.add_argument("--transports", nargs="+", default=["auto", "litellm"])
    args = parser.parse_args()
    import os

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    source = synthetic_rows(WORK / f"rows_{args.rows}.jsonl", args.rows)
    print(f"machine: {machine()}; {args.rows} rows, one metric")
    for pair in args.runs:
        concurrency, latency = int(pair.split(":")[0]), float(pair.split(":")[1])
        limit = concurrency / latency
        with fake_server(latency) as url:
            for transport in args.transports:
                cache_dir = WORK / f"cache_c{concurrency}_{transport}"
                shutil.rmtree(cache_dir, ignore_errors=True)
                label = f"C={concurrency}, L={latency * 1000:.0f} ms, transport {transport}"
                cold = run(str(source), str(WORK / "out.parquet"), url, concurrency, str(cache_dir), transport)
                print(f"[1] {label}: judging {cold['judge_rows_per_s']:.0f} rows/s = {cold['judge_rows_per_s'] / limit:.2f} of the "
                      f"{limit:.0f} calls/s limit; end to end {cold['end_to_end_rows_per_s']:.0f} rows/s "
                      f"({cold['seconds']:.1f} s, {cold['calls']} calls, {cold['ok']} ok)", flush=True)
                warm = run(str(source), str(WORK / "out.parquet"), url, concurrency, str(cache_dir), transport)
                print(f"[2] warm cache, {label}: end to end {warm['end_to_end_rows_per_s']:.0f} rows/s "
                      f"({warm['seconds']:.2f} s, {warm['cached']} of {warm['rows']} rows from the cache, {warm['calls']} calls)", flush=True)


if __name__ == "__main__":
    main()
