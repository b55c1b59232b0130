"""`make demo`: score sample_data/ with the embedded offline judge and show the gate's verdict.

No API key and no server: the judge is a small instruct model run in-process on the CPU
(configs/local.yaml). Exits 0 when the run itself worked (the gate may pass or fail on the
sample data: that is information), non-zero when it did not (exit 2 or 3 from
`ragjudge score`).
"""

from __future__ import annotations

import subprocess
import sys

COMMAND = [
    "score", "sample_data/rag_eval.jsonl", "-c", "configs/local.yaml",
    "-o", "out/demo_scored.parquet", "--summary-json", "out/demo_summary.json",
]


def main() -> int:
    print("$ ragjudge " + " ".join(COMMAND), file=sys.stderr, flush=True)
    code = subprocess.call([sys.executable, "-m", "ragjudge", *COMMAND])
    verdict = {0: "gate passed", 1: "gate failed on the sample data (the run worked)"}.get(code)
    if verdict is None:
        print(f"demo: ragjudge score exited {code}: the run did not work", file=sys.stderr)
        return code
    print(f"demo: {verdict}; scored table in out/demo_scored.parquet, summary in out/demo_summary.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
