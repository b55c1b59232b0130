"""Figure 5: the embedded judge on the sample data: rows/s, seconds per row, tokens per call.

Scores sample_data/rag_eval.jsonl with configs/local.yaml and a fresh cache folder (so
every row is judged), then reads the summary JSON.

    python bench/embedded.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

from _common import ROOT, WORK, machine


def main() -> None:
    print(f"machine: {machine()}")
    cache = WORK / "embedded_cache"
    models = ROOT / "bench" / "_work" / "embedded_cache" / "models"
    keep = None
    if models.exists():  # keep the assembled model between runs, drop the responses
        keep = WORK / "embedded_models"
        shutil.rmtree(keep, ignore_errors=True)
        models.rename(keep)
    shutil.rmtree(cache, ignore_errors=True)
    if keep:
        cache.mkdir(parents=True)
        keep.rename(models)
    summary = WORK / "embedded_summary.json"
    command = [sys.executable, "-m", "ragjudge", "score", "sample_data/rag_eval.jsonl", "-c", "configs/local.yaml",
               "--cache-dir", str(cache), "--summary-json", str(summary), "-q", "--min-pass-rate", "0"]
    start = time.perf_counter()
    code = subprocess.call(command, cwd=ROOT)
    seconds = time.perf_counter() - start
    doc = json.loads(summary.read_text())
    calls = doc["provider_calls"]
    rows = doc["rows"]
    prompt = sum(m["prompt_tokens"] for m in doc["metrics"].values())
    completion = sum(m["completion_tokens"] for m in doc["metrics"].values())
    for name, m in doc["metrics"].items():
        print(f"    {name}: ok {m['ok']}, error {m['error']}, skipped {m['skipped']}")
    print(f"[5] embedded judge, {rows} sample rows, {calls} judge calls in {seconds:.0f} s (model load and assembly included): "
          f"{rows / seconds:.3f} rows/s, {seconds / rows:.1f} s per row, {seconds / max(calls, 1):.1f} s per call; "
          f"per call {prompt / max(calls, 1):.0f} prompt + {completion / max(calls, 1):.0f} completion tokens (exit {code})")


if __name__ == "__main__":
    main()
