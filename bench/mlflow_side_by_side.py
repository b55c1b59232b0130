"""Figure 6: ragjudge and MLflow's context-sufficiency judge on the same rows and fake server.

Both score N grounded rows (default 5,000) against the same fake OpenAI-compatible server
(100 ms latency). ragjudge runs at --concurrency C; MLflow runs `mlflow.genai.evaluate`
with a scorer calling `mlflow.genai.judges.is_context_sufficient`, parallelised by MLflow's
documented MLFLOW_GENAI_EVAL_MAX_WORKERS = C. MLflow lives in its own environment
(bench/_work/mlflow-venv, made by mlflow_side_by_side.sh). Prints rows/s for each and the ratio.

    bash bench/mlflow_side_by_side.sh [--rows 5000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess

from _common import ROOT, WORK, fake_server, machine, synthetic_rows
from throughput import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for MLflow")
    parser.add_argument("--mlflow-python", default=str(WORK / "mlflow-venv" / "bin" / "python"))
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    source = synthetic_rows(WORK / f"rows_{args.rows}.jsonl", args.rows)
    print(f"machine: {machine()}; {args.rows} rows, fake server latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}")
    with fake_server(args.latency) as url:
        cache = WORK / "side_by_side_cache"
        shutil.rmtree(cache, ignore_errors=True)
        ours = run(str(source), str(WORK / "side_by_side.parquet"), url, args.concurrency, str(cache))
        tracking = WORK / "mlruns"
        tracking.with_suffix(".db").unlink(missing_ok=True)
        env = {**os.environ, "OPENAI_API_BASE": url, "MLFLOW_GENAI_EVAL_MAX_WORKERS": str(args.concurrency),
               "MLFLOW_TRACKING_URI": f"sqlite:///{tracking}.db"}
        try:
            done = subprocess.run([args.mlflow_python, str(ROOT / "bench" / "_mlflow_worker.py"), str(source), "openai:/gpt-4o-mini"],
                                  env=env, capture_output=True, text=True, cwd=WORK, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"[6] ragjudge: {ours['end_to_end_rows_per_s']:.0f} rows/s end to end; MLflow did not finish {args.rows} rows "
                  f"in {args.timeout:.0f} s (< {args.rows / args.timeout:.2f} rows/s)")
            return
        if done.returncode != 0:
            print(f"[6] MLflow run failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}")
            return
        theirs = json.loads(done.stdout.strip().splitlines()[-1])
    mlflow_rate = theirs["rows"] / theirs["seconds"]
    ours_rate = ours["end_to_end_rows_per_s"]
    print(f"[6] ragjudge: {ours_rate:.0f} rows/s end to end ({ours['seconds']:.1f} s); MLflow {theirs['rows']} rows: "
          f"{mlflow_rate:.0f} rows/s ({theirs['seconds']:.1f} s, mlflow.genai.evaluate, MLFLOW_GENAI_EVAL_MAX_WORKERS={args.concurrency}); "
          f"ratio ragjudge / MLflow = {ours_rate / mlflow_rate:.2f}")


if __name__ == "__main__":
    main()
