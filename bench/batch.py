"""Figure 9: N rows (both metrics) judged through the fake Batch API end to end (issue 50).

Each step is its own ``ragjudge score --batch`` process (the one that submits is gone before the
next collects, as a process killed between submit and collect): the first submits round 1
(sufficiency and completeness's statements calls) and exits 4; the next collects round 1 and
submits round 2 (the coverage calls), exit 4; the last collects and finishes. Then the same rows
are judged directly on another cache. Prints each step's exit code and time, the calls the
server saw (each custom_id submitted once?), whether the verdicts equal the direct run's, and
the cost of each (the batch's should be half).

    python bench/batch.py [--rows 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from _common import PYTHON, ROOT, WORK, machine

sys.path.insert(0, str(ROOT))

from ragjudge.fakeserver import FakeJudgeServer  # noqa: E402

MODEL = "openai/gpt-4o-mini"
COLUMNS = ["sufficiency_score", "sufficiency_status", "sufficiency_rationale", "completeness_score", "completeness_status",
           "completeness_missing"]


def rows(count: int) -> list[dict]:
    out = []
    for i in range(count):
        out.append({"id": f"r{i}", "request": f"Which river flows through city {i}?",
                    "context": [f"The river Seine {i} flows through city {i}.", f"City {i} has a cathedral."],
                    "expected_response": f"The Seine {i} flows through city {i}. City {i} has a cathedral {i % 7}.",
                    "response": f"The Seine {i} flows through city {i}." if i % 3 else f"No idea {i}."})
    return out


def score(table: str, out: str, cache: str, url: str, batch: bool) -> tuple[int, float]:
    command = [PYTHON, "-m", "ragjudge", "score", table, "-o", out, "-q", "--model", MODEL, "--api-base", url, "--cache-dir", cache,
               "--min-pass-rate", "0", "--concurrency", "64"] + (["--batch"] if batch else [])
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": "sk-bench"})
    return done.returncode, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    args = parser.parse_args()
    folder = WORK / "batch"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    table = str(folder / "rows.jsonl")
    with open(table, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in rows(args.rows))
    import pandas as pd

    print(f"figure 9: {args.rows} rows, both metrics, fake Batch API; {machine()}")
    with FakeJudgeServer() as server:
        batch_out, direct_out = str(folder / "batch.parquet"), str(folder / "direct.parquet")
        step = 0
        while True:
            step += 1
            code, seconds = score(table, batch_out, str(folder / "cache-batch"), server.url, True)
            print(f"batch process {step}: exit {code} in {seconds:.1f} s; batches created {server.batch_creates}, "
                  f"lines submitted {sum(server.batch_submitted.values())}")
            if code != 4 or step > 6:
                break
        submitted = server.batch_submitted
        print(f"distinct calls submitted {len(submitted)}, most times one call was submitted {max(submitted.values())}, "
              f"direct calls during the batch run {server.calls}")
        code, seconds = score(table, direct_out, str(folder / "cache-direct"), server.url, False)
        print(f"direct run: exit {code} in {seconds:.1f} s, {server.calls} calls")
    batched, direct = pd.read_parquet(batch_out), pd.read_parquet(direct_out)
    same = batched[COLUMNS].astype(str).equals(direct[COLUMNS].astype(str))
    print(f"verdicts equal to the direct run's: {same}")
    for metric in ("sufficiency", "completeness"):
        cost_batch, cost_direct = batched[f"{metric}_cost_usd"].sum(), direct[f"{metric}_cost_usd"].sum()
        print(f"{metric}: ok {int((batched[f'{metric}_status'] == 'ok').sum())}, cost batch ${cost_batch:.6f}, direct "
              f"${cost_direct:.6f}, ratio {cost_batch / cost_direct:.3f}")


if __name__ == "__main__":
    main()
