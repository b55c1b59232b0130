"""Build sample_data/rag_whole.jsonl: whole RAG rows (request, context, response and ground
truth together) from CLAPNQ's answerable rows in ../shared/data, so that each diagnosis
(ok / generation / retrieval / beyond_context) appears; and add two of them to
sample_data/demo.jsonl (see sample_data/README.md).

The rule, reproducible: take the 4 answerable rows of ``clapnq_sufficiency_dev`` with the
shortest passage plus gold answer (``reference_answer_positive_only``), ties broken by id, in
that order (rows 0..3). Rows 0 and 1 are the questions; row k + 2 is question k's *partner*
(another question). Each question gives four rows, all with its own request and its own gold
answer as ground truth (``expected_response``): ``ok`` (its own passage, its gold answer as the
response), ``generation`` (its own passage, the partner's gold answer), ``retrieval`` (the
partner's passage, the partner's gold answer: what that passage supports) and
``beyond_context`` (the partner's passage, its own gold answer, which that passage does not
hold). ``label_diagnosis`` records the cell each row was built for (constructed, not a human
label; the judges never see it).

    python scripts/make_whole_rows.py [SHARED_DATA_FOLDER]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data"
SLICE = "clapnq_sufficiency_dev"
WHOLE = "clapnq_whole_rows"  # the ``slice`` of the rows built here
PLAN = (  # per question: the cell, whose passage, whose gold answer is the response
    ("ok", "own", "own"),
    ("generation", "own", "partner"),
    ("retrieval", "partner", "partner"),
    ("beyond_context", "partner", "own"),
)
DEMO = ("whole-q1-ok", "whole-q1-retrieval")  # added to demo.jsonl: one ground truth, split into statements once


def load() -> list[dict]:
    with open(SHARED / f"{SLICE}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def build(data: list[dict]) -> list[dict]:
    """The 8 rows, in order (see the module docstring)."""
    answerable = [r for r in data if r["label_sufficient"] is True and r.get("reference_answer_positive_only")]
    chosen = sorted(answerable, key=lambda r: (len(r["context"][0]) + len(r["reference_answer_positive_only"]), r["id"]))[:4]
    rows = []
    for k in (0, 1):
        own, partner = chosen[k], chosen[k + 2]
        for cell, passage, answer in PLAN:
            context_from = own if passage == "own" else partner
            answer_from = own if answer == "own" else partner
            rows.append({
                "id": f"whole-q{k + 1}-{cell}",
                "request": own["request"],
                "context": context_from["context"],
                "expected_facts": None,
                "expected_response": own["reference_answer_positive_only"],
                "response": answer_from["reference_answer_positive_only"],
                "label_sufficient": passage == "own",
                "label_completeness": None,
                "label_diagnosis": cell,
                "source": own["source"],
                "slice": WHOLE,
                "built_from": f"request and ground truth: {own['id']}; context: {context_from['id']}; "
                              f"response: the gold answer of {answer_from['id']}",
            })
    return rows


def main() -> None:
    rows = build(load())
    out = ROOT / "sample_data"
    with open(out / "rag_whole.jsonl", "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    demo = out / "demo.jsonl"
    kept = [line for line in demo.read_text(encoding="utf-8").splitlines() if line.strip() and json.loads(line).get("slice") != WHOLE]
    demo.write_text("".join(line + "\n" for line in kept + [json.dumps(r, ensure_ascii=False) for r in rows if r["id"] in DEMO]), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {out / 'rag_whole.jsonl'} ({len(DEMO)} of them added to demo.jsonl)")


if __name__ == "__main__":
    main()
