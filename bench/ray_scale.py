"""Figure 7: rows/s on a local Ray cluster (2 CPUs) against one process, on the same rows and
fake server, which shows what Ray costs here.

N rows (default 5,000), one metric, the fake server at latency L (100 ms) in its own process;
the same total concurrency C (64) in both runs: one local process at C, and Ray with A actors
(2) at C / A each. Prints rows/s end to end (reading, scoring, writing one Parquet file),
Ray's start-up excluded and then included.

    python bench/ray_scale.py [--rows 5000] [--latency 0.1] [--concurrency 64] [--actors 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from _common import WORK, fake_server, machine, synthetic_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--actors", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    from ragjudge.config import read_raw_config as load_config  # the config as read, untyped
    from ragjudge.run import evaluate
    from ragjudge.run.ray import evaluate_on_ray
    from ragjudge.run.request import EngineChoice, Outputs
    from ragjudge.run.source import Source

    source = synthetic_rows(WORK / f"rows_{args.rows}.jsonl", args.rows)
    limit = args.concurrency / args.latency
    print(f"machine: {machine()}; {args.rows} rows, one metric, fake server at {args.latency * 1000:.0f} ms, total concurrency {args.concurrency} "
          f"(limit {limit:.0f} calls/s)")
    with fake_server(args.latency) as url:
        def config(concurrency: int) -> object:
            return load_config(None, {"judge": {"model": "openai/fake-judge", "api_base": url, "concurrency": concurrency},
                                      "metrics": ["sufficiency"], "cache": {"enabled": False}, "gate": {"min_pass_rate": 0.0}, "chunk_size": 500})

        started = time.perf_counter()
        evaluate(str(source), config(args.concurrency), output=str(WORK / "ray_local.parquet"))
        local = time.perf_counter() - started
        print(f"[7] one process, C={args.concurrency}: {args.rows / local:.0f} rows/s ({local:.1f} s) = {args.rows / local / limit:.2f} of the limit",
              flush=True)
        started = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        up = time.perf_counter() - started
        try:
            shutil.rmtree(WORK / "ray_out", ignore_errors=True)
            started = time.perf_counter()
            evaluate_on_ray(Source.of(str(source)), config(args.concurrency // args.actors), outputs=Outputs(str(WORK / "ray_out.parquet")),
                            engine=EngineChoice("ray", ray_actors=args.actors))
            on_ray = time.perf_counter() - started
        finally:
            ray.shutdown()
        print(f"[7] Ray (local cluster, 2 CPUs), {args.actors} actors at C={args.concurrency // args.actors}: {args.rows / on_ray:.0f} rows/s "
              f"({on_ray:.1f} s) = {args.rows / on_ray / limit:.2f} of the limit; with Ray's start-up ({up:.1f} s): {args.rows / (on_ray + up):.0f} rows/s",
              flush=True)


if __name__ == "__main__":
    main()
