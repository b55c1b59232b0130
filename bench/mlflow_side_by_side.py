"""Figure 6: ragjudge and MLflow's context-sufficiency judge on the same rows and fake server.

Both score N grounded rows (default 5,000) against the same fake OpenAI-compatible server
(100 ms latency; a fresh instance per tool, so each tool's HTTP calls can be counted). ragjudge
runs at --concurrency C; MLflow runs `mlflow.genai.evaluate` with a scorer calling
`mlflow.genai.judges.is_context_sufficient`, parallelised by MLflow's documented
MLFLOW_GENAI_EVAL_MAX_WORKERS = C. MLflow lives in its own environment
(bench/_work/mlflow-venv, made by mlflow_side_by_side.sh). Prints rows/s for each and the ratio.

    bash bench/mlflow_side_by_side.sh [--rows 5000] [--concurrency 16]

MLflow settings (all documented MLflow / LiteLLM environment variables; see MLFLOW_ENV):

* OPENAI_API_BASE, OPENAI_API_KEY: the "openai:/" judge model goes through MLflow's native
  gateway adapter, which reads these two (a dummy key; the fake server ignores it).
* MLFLOW_GENAI_EVAL_MAX_WORKERS = C, and MLFLOW_GENAI_EVAL_PREDICT_RATE_LIMIT =
  MLFLOW_GENAI_EVAL_SCORER_RATE_LIMIT = "0" (--mlflow-rate-limit): MLflow's default "auto"
  token bucket caps judge calls at 10 per second, rising to at most 20, whatever the
  worker count; "0" disables it so that, as for ragjudge, only the concurrency limits calls.
* MLFLOW_SQLALCHEMYSTORE_POOLCLASS = NullPool: evaluate() logs a trace and an assessment per
  row to the SQLite tracking store, and MLflow's trace writer opens a second pooled session
  while holding one (start_trace -> get_experiment). With the default pool (5 + 10
  overflow) and more than 7 workers, the threads can exhaust it and wait out SQLAlchemy's
  30 s pool timeout ("QueuePool limit of size 5 overflow 10 reached"), dropping those
  traces; that stall, repeated, is why MLflow once did < 1 row/s here.
* MLFLOW_MODEL_CATALOG_URI = "" and LITELLM_LOCAL_MODEL_COST_MAP = True: use the model
  catalogs bundled with MLflow / LiteLLM instead of downloading them; offline, each
  download is retried with back-off for about 7 s while every worker waits on it.
* MLFLOW_DISABLE_TELEMETRY = true: no usage reporting from an offline benchmark.

MLflow's one-time costs (creating the tracking database, lazy imports) are paid by a warm-up
evaluate() over --mlflow-warmup rows before the timed run, as process start-up is excluded
on ragjudge's side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from contextlib import contextmanager

from _common import PYTHON, ROOT, WORK, machine, synthetic_rows
from throughput import run


@contextmanager
def counted_fake_server(latency: float):
    """The fake server in its own process, like _common.fake_server, but its request count
    (printed on exit) is kept: yields (url, counts), counts["calls"] is set on exit."""
    process = subprocess.Popen(
        [PYTHON, "-m", "ragjudge.fakeserver", "--port", "0", "--latency", str(latency)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    counts: dict[str, int | None] = {"calls": None}
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        if not url.startswith("http"):
            raise RuntimeError("fake server did not start")
        yield url, counts
    finally:
        process.terminate()
        try:
            _, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        for line in (err or "").splitlines():
            if line.startswith("calls:"):
                counts["calls"] = int(line.split(":")[1])


def mlflow_env(url: str, concurrency: int, tracking_db: str, rate_limit: str) -> dict[str, str]:
    return {
        "OPENAI_API_BASE": url,
        "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "sk-bench-not-a-key"),
        "MLFLOW_TRACKING_URI": f"sqlite:///{tracking_db}",
        "MLFLOW_GENAI_EVAL_MAX_WORKERS": str(concurrency),
        "MLFLOW_GENAI_EVAL_PREDICT_RATE_LIMIT": rate_limit,
        "MLFLOW_GENAI_EVAL_SCORER_RATE_LIMIT": rate_limit,
        "MLFLOW_SQLALCHEMYSTORE_POOLCLASS": "NullPool",
        "MLFLOW_MODEL_CATALOG_URI": "",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "MLFLOW_DISABLE_TELEMETRY": "true",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=600, help="seconds to wait for MLflow")
    parser.add_argument("--mlflow-python", default=str(WORK / "mlflow-venv" / "bin" / "python"))
    parser.add_argument("--mlflow-warmup", type=int, default=16,
                        help="rows of an untimed warm-up evaluate() before MLflow's timed run (0: none)")
    parser.add_argument("--mlflow-rate-limit", default="0",
                        help='MLFLOW_GENAI_EVAL_{PREDICT,SCORER}_RATE_LIMIT: "0" (off) or MLflow\'s default "auto"')
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-key")
    source = synthetic_rows(WORK / f"rows_{args.rows}.jsonl", args.rows)
    print(f"machine: {machine()}; {args.rows} rows, fake server latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}")
    with counted_fake_server(args.latency) as (url, our_counts):
        cache = WORK / "side_by_side_cache"
        shutil.rmtree(cache, ignore_errors=True)
        ours = run(str(source), str(WORK / "side_by_side.parquet"), url, args.concurrency, str(cache))
    ours_rate = ours["end_to_end_rows_per_s"]
    print(f"[6] ragjudge: {ours_rate:.0f} rows/s end to end ({ours['seconds']:.1f} s; judging phase {ours['judge_rows_per_s']:.0f} rows/s; "
          f"{our_counts['calls']} HTTP calls for {ours['rows']} rows)")

    tracking_db = WORK / "mlruns.db"
    tracking_db.unlink(missing_ok=True)
    with counted_fake_server(args.latency) as (url, their_counts):
        env = {**os.environ, **mlflow_env(url, args.concurrency, str(tracking_db), args.mlflow_rate_limit)}
        command = [args.mlflow_python, str(ROOT / "bench" / "_mlflow_worker.py"), str(source), "openai:/gpt-4o-mini",
                   str(args.mlflow_warmup)]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=WORK, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            done = None
    if done is None:
        print(f"[6] ragjudge: {ours_rate:.0f} rows/s end to end; MLflow did not finish {args.rows} rows "
              f"in {args.timeout:.0f} s (< {args.rows / args.timeout:.2f} rows/s; {their_counts['calls']} HTTP calls made)")
        return
    if done.returncode != 0:
        tail = "\n    ".join(done.stderr.strip().splitlines()[-5:])
        print(f"[6] MLflow run failed (exit {done.returncode}):\n    {tail}")
        return
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    mlflow_rate = theirs["rows"] / theirs["seconds"]
    judged = theirs["rows"] + theirs["warmup_rows"]
    calls = their_counts["calls"]
    per_row = f"{calls / judged:.2f}" if calls is not None and judged else "?"
    print(f"[6] MLflow: {mlflow_rate:.0f} rows/s ({theirs['rows']} rows in {theirs['seconds']:.1f} s, {theirs['ok']} judged, "
          f"{theirs['failed']} failed; {per_row} HTTP calls per row; {theirs['cpu_seconds'] / theirs['rows'] * 1000:.0f} ms CPU per row; warm-up {theirs['warmup_rows']} rows "
          f"{theirs['warmup_seconds']:.1f} s, not timed; mlflow.genai.evaluate, MLFLOW_GENAI_EVAL_MAX_WORKERS={args.concurrency}, "
          f"rate limit {args.mlflow_rate_limit!r})")
    print(f"[6] ragjudge: {ours_rate:.0f} rows/s end to end ({ours['seconds']:.1f} s); MLflow {theirs['rows']} rows: "
          f"{mlflow_rate:.0f} rows/s ({theirs['seconds']:.1f} s); ratio ragjudge / MLflow = {ours_rate / mlflow_rate:.2f}")


if __name__ == "__main__":
    main()
