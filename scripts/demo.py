"""`make demo`: score sample_data/demo.jsonl with the embedded offline judge, show each verdict
as it lands, then the gate's verdict.

No API key and no server: the judge is a small instruct model run in-process on the CPU
(configs/local.yaml). Eight rows: the six of sample_data/demo.jsonl's first part and two whole
RAG rows (request, context, response and ground truth), whose diagnosis (sufficiency x
completeness: ok / generation / retrieval / beyond_context) is printed at the end. Twelve
judge calls: about 5 minutes on 2 cores from an empty cache, seconds when re-run (the response cache). Exits 0 when the run itself worked (the gate may pass or fail on the
sample data: that is information), non-zero when it did not (exit 2 or 3 from
`ragjudge score`).
"""

from __future__ import annotations

import subprocess
import sys

COMMAND = [
    "score", "sample_data/demo.jsonl", "-c", "local", "-v",
    "-o", "out/demo_scored.parquet", "--summary-json", "out/demo_summary.json", "--html", "out/demo_report.html",
]


def show_diagnosis(path: str = "out/demo_scored.parquet") -> None:
    """Print the diagnosis of each whole RAG row of the demo (the rows with a diagnosis column)."""
    import pandas as pd

    frame = pd.read_parquet(path)
    if "diagnosis" not in frame.columns:
        return
    whole = frame[frame["context"].notna() & frame["response"].notna()]
    for _, row in whole.iterrows():
        value = row["diagnosis"] if pd.notna(row["diagnosis"]) else "none (a verdict is not ok)"
        print(f"demo: {row['id']}: diagnosis {value} (sufficiency {row['sufficiency_status']}, completeness "
              f"{row['completeness_status']}; built as {row.get('label_diagnosis')})", file=sys.stderr)


def main() -> int:
    print("$ ragjudge " + " ".join(COMMAND), file=sys.stderr, flush=True)
    code = subprocess.call([sys.executable, "-m", "ragjudge", *COMMAND])
    verdict = {0: "gate passed", 1: "gate failed on the sample data (the run worked)"}.get(code)
    if verdict is None:
        print(f"demo: ragjudge score exited {code}: the run did not work", file=sys.stderr)
        return code
    show_diagnosis()
    print(f"demo: {verdict}; scored table in out/demo_scored.parquet, summary in out/demo_summary.json, "
          "report in out/demo_report.html. All 32 sample rows: ragjudge score sample_data/rag_eval.jsonl -c local; "
          "8 whole RAG rows, a diagnosis each: ragjudge score sample_data/rag_whole.jsonl -c local", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
