"""Rebuild sample_data/ from the development slices in ../shared/data (see sample_data/README.md).

Takes a fixed, label-balanced selection of short rows from each slice, and writes the same
rows as JSONL, CSV (contexts as JSON arrays in cells) and MLflow's record shape.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data"
KEEP = ["id", "request", "context", "expected_facts", "expected_response", "response", "label_sufficient", "label_completeness", "source"]
PLAN = [  # file, rows per label value, label field
    ("squad2_goldremoved_sufficiency_dev", 5, "label_sufficient"),
    ("clapnq_sufficiency_dev", 4, "label_sufficient"),
    ("squad2_unanswerable_sufficiency_dev", 3, "label_sufficient"),
]
DEMO_IDS = [
    "squad2gr-b69c5c027a2cdbbeb1c736376", "squad2gr-13a0a68c740c2bb70befaf6bd",
    "clapnq--5352303832848103685", "clapnq--596366246431531111",
    "squality-62212-q1-bart-dpr", "squality-62212-q1-human",
]


def load(name: str) -> list[dict]:
    with open(SHARED / f"{name}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def size(row: dict) -> int:
    return sum(len(p) for p in row.get("context") or []) + len(row.get("response") or "") + len(row.get("expected_response") or "")


def main() -> None:
    rows: list[dict] = []
    for name, per_label, label in PLAN:
        data = load(name)
        for value in (True, False):
            pool = sorted((r for r in data if r[label] is value), key=size)
            rows += [{k: r.get(k) for k in KEEP} | {"slice": name} for r in pool[:per_label]]
    squality = sorted(load("squality_completeness_dev"), key=size)
    low = [r for r in squality if r["label_completeness"] < 3][:4]
    high = [r for r in squality if r["label_completeness"] >= 3.5][:4]
    # SQuALITY rows hold no retrieval: their context is null (absent), not an empty list, which
    # would say that a retriever found nothing (sufficiency 0.0, "no passages retrieved")
    rows += [{k: r.get(k) for k in KEEP} | {"context": None, "slice": "squality_completeness_dev"} for r in low + high]
    out = ROOT / "sample_data"
    out.mkdir(exist_ok=True)
    with open(out / "rag_eval.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    with open(out / "rag_eval.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else ("" if v is None else v) for k, v in row.items()})
    with open(out / "rag_eval.mlflow.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            record = {
                "inputs": {"query": row["request"]},
                "outputs": {
                    "retrieved_context": None if row["context"] is None else [{"content": p, "doc_uri": f"{row['id']}#ctx{i}"} for i, p in enumerate(row["context"])],
                    "response": row["response"],
                },
                "expectations": {"expected_facts": row["expected_facts"], "expected_response": row["expected_response"]},
                "labels": {"label_sufficient": row["label_sufficient"], "label_completeness": row["label_completeness"]},
                "id": row["id"],
                "source": row["source"],
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    # demo.jsonl: the few rows `make demo` judges (under 2 minutes with the embedded judge on
    # 2 cores): grounded and reference-free sufficiency, each with a "yes" and a "no" row, and
    # two SQuALITY responses to one question, whose ground truth is split into statements once
    by_id = {row["id"]: row for row in rows}
    with open(out / "demo.jsonl", "w", encoding="utf-8") as handle:
        for row_id in DEMO_IDS:
            handle.write(json.dumps(by_id[row_id], ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} rows to {out} ({len(DEMO_IDS)} of them to demo.jsonl)")


if __name__ == "__main__":
    main()
