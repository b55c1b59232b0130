"""`make demo`: score sample_data/ end to end and show the gate's verdict.

Uses the local fake OpenAI-compatible server (ragjudge.fakeserver) as the judge. Exits 0
when the run itself worked (the gate may pass or fail on the sample data: that is
information), non-zero when it did not (exit 2 or 3 from `ragjudge score`).
"""

from __future__ import annotations

import subprocess
import sys

from ragjudge.fakeserver import FakeJudgeServer


def main() -> int:
    with FakeJudgeServer() as server:
        command = [
            sys.executable, "-m", "ragjudge", "score", "sample_data/rag_eval.jsonl",
            "--model", "openai/fake-judge", "--api-base", server.url,
            "-o", "out/demo_scored.parquet", "--summary-json", "out/demo_summary.json",
        ]
        print("$ " + " ".join(command[2:]), file=sys.stderr)
        code = subprocess.call(command)
    verdict = {0: "gate passed", 1: "gate failed on the sample data (the run worked)"}.get(code)
    if verdict is None:
        print(f"demo: ragjudge score exited {code}: the run did not work", file=sys.stderr)
        return code
    print(f"demo: {verdict}; scored table in out/demo_scored.parquet, summary in out/demo_summary.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
