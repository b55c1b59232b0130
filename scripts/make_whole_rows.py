"""Build sample_data/rag_whole.jsonl: whole RAG rows (request, context, response and ground
truth together) from CLAPNQ's answerable rows in ../shared/data, so that each diagnosis
(ok / generation / retrieval / beyond_context) appears; and add the first rows of two of its
cells to sample_data/demo.jsonl (see sample_data/README.md).

The rule, reproducible: take the 8 answerable rows of ``clapnq_sufficiency_dev`` with the
shortest passage plus gold answer (``reference_answer_positive_only``), ties broken by id, in
that order; row k's partner is row (k + 4) mod 8 (another question). Every row's request is its
own and its ground truth (``expected_response``) its own gold answer. Rows 0-1 keep their own
passage and answer with their gold answer (ok); rows 2-3 keep their own passage and answer
with the partner's gold answer (generation); rows 4-5 get the partner's passage and answer
with the partner's gold answer, what that passage supports (retrieval); rows 6-7 get the
partner's passage and answer with their own gold answer, which that passage does not hold
(beyond_context). ``label_diagnosis`` records the cell each row was built for (constructed,
not a human label; the judges never see it).

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
PLAN = (  # per pair of rows: the cell, whose passage, whose answer is the response
    ("ok", "own", "own"),
    ("generation", "own", "partner"),
    ("retrieval", "partner", "partner"),
    ("beyond_context", "partner", "own"),
)
DEMO = (0, 4)  # rows added to demo.jsonl: one ok, one retrieval (two more calls each)


def load() -> list[dict]:
    with open(SHARED / f"{SLICE}.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def build(data: list[dict]) -> list[dict]:
    """The 8 rows, in order (see the module docstring)."""
    answerable = [r for r in data if r["label_sufficient"] is True and r.get("reference_answer_positive_only")]
    chosen = sorted(answerable, key=lambda r: (len(r["context"][0]) + len(r["reference_answer_positive_only"]), r["id"]))[:8]
    rows = []
    for k, row in enumerate(chosen):
        partner = chosen[(k + 4) % 8]
        cell, passage, answer = PLAN[k // 2]
        rows.append({
            "id": f"whole-{cell}-{k % 2 + 1}",
            "request": row["request"],
            "context": (row if passage == "own" else partner)["context"],
            "expected_facts": None,
            "expected_response": row["reference_answer_positive_only"],
            "response": (row if answer == "own" else partner)["reference_answer_positive_only"],
            "label_sufficient": passage == "own",
            "label_completeness": None,
            "label_diagnosis": cell,
            "source": row["source"],
            "slice": WHOLE,
            "built_from": f"request and ground truth: {row['id']}; context: {(row if passage == 'own' else partner)['id']}; "
                          f"response: the gold answer of {(row if answer == 'own' else partner)['id']}",
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
    demo.write_text("".join(line + "\n" for line in kept + [json.dumps(rows[i], ensure_ascii=False) for i in DEMO]), encoding="utf-8")
    print(f"wrote {len(rows)} rows to {out / 'rag_whole.jsonl'} ({len(DEMO)} of them added to demo.jsonl)")


if __name__ == "__main__":
    main()
