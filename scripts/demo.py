"""`make demo`: score sample_data/demo.jsonl with the embedded offline judge, show each verdict
as it lands, then the gate's verdict.

No API key and no server: the judge is a small instruct model run in-process on the CPU
(configs/local.yaml). Each verdict is then printed beside the human label its sample row
carries (label_sufficient, label_completeness), so that a newcomer sees where the offline judge
agrees with people and where not. Eight rows: the six of sample_data/demo.jsonl's first part and two whole
RAG rows (request, context, response and ground truth), whose diagnosis (sufficiency x
completeness: ok / generation / retrieval / beyond_context) is printed at the end. Twelve
judge calls: about 5 minutes on 2 cores from an empty cache, seconds when re-run (the response cache). Exits 0 when the run itself worked (the gate may pass or fail on the
sample data: that is information), non-zero when it did not (exit 2 or 3 from
`ragjudge score`).
"""

from __future__ import annotations

import subprocess
import sys

from ragjudge.types import score_text

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
        print(f"demo: {row['id']}: diagnosis {value} (row status: sufficiency {row['sufficiency_status']}, completeness "
              f"{row['completeness_status']}; built as {row.get('label_diagnosis')})", file=sys.stderr)


def _judge_said(row, metric: str) -> tuple[str, bool | None]:
    """What the judge said for ``metric`` on a scored ``row``, and whether it passed (None: no verdict)."""
    import pandas as pd

    status = row.get(f"{metric}_status")
    if status != "ok":
        return f"{status or 'not judged'}", None
    score, passed = row[f"{metric}_score"], bool(row[f"{metric}_passed"])
    if metric == "sufficiency":
        return ("yes" if passed else "no"), passed
    return (f"{score_text(score)} of 5, {'pass' if passed else 'fail'}" if pd.notna(score) else "no score"), passed


LABELS = {"sufficiency": "label_sufficient", "completeness": "label_completeness"}  # the sample data's label of each metric
# slices whose label_sufficient is constructed (gold paragraph kept or removed), not a person's
CONSTRUCTED = {"squad2_goldremoved_sufficiency_dev": ("built with its gold paragraph", "built with its gold paragraph removed"),
               "clapnq_whole_rows": ("built with its own passage", "built with another question's passage")}


def _people_said(row, metric: str) -> tuple[str, bool | None]:
    """The label the sample row carries for ``metric`` (label_sufficient: yes/no, a person's or,
    for the slices in ``CONSTRUCTED``, by construction; label_completeness: a person's 1..5, a
    pass at 3 or more, as docs/quality.md compares them), and whether it is a pass (None: the
    row carries no label)."""
    import pandas as pd

    value = row.get(LABELS[metric])
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "no label", None
    if metric == "sufficiency":
        label = value if isinstance(value, bool) else str(value).strip().lower() in ("true", "yes", "1")
        built = CONSTRUCTED.get(row.get("slice"))
        if built:
            return f"label {'yes' if label else 'no'} ({built[0] if label else built[1]})", bool(label)
        return f"people {'yes' if label else 'no'}", bool(label)
    rating = float(value)
    # as the judge's score and ragjudge score -v show one: 2.755 is 2.76 in every line, not 2.755 in one and 2.75 in another
    return f"people {score_text(rating)} of 5, {'pass' if rating >= 3 else 'fail'} at 3", rating >= 3


def show_labels(path: str = "out/demo_scored.parquet") -> tuple[int, int]:
    """Print each verdict of the demo beside the human label its sample row carries
    (``label_sufficient``, ``label_completeness``), and whether they agree: a newcomer sees
    where the offline judge agrees with people and where not. Returns (agreeing, compared)."""
    import pandas as pd

    from ragjudge.local import calibrated_thresholds

    frame = pd.read_parquet(path)
    agree = compared = 0
    print("demo: each verdict beside the label its sample row carries (label_sufficient: yes/no, a person's or by "
          "construction; label_completeness: a person's rating 1..5, a pass at 3; the judge's pass is at its own "
          f"threshold, {calibrated_thresholds()['completeness']:g} for the embedded judge's completeness, as docs/quality.md "
          "compares them):", file=sys.stderr)
    for _, row in frame.iterrows():
        for metric in ("sufficiency", "completeness"):
            if row.get(f"{metric}_status") == "skipped" or f"{metric}_status" not in frame.columns:
                continue
            judge, judge_pass = _judge_said(row, metric)
            people, people_pass = _people_said(row, metric)
            if judge_pass is None or people_pass is None:
                verdict = ""
            else:
                compared += 1
                agree += judge_pass == people_pass
                verdict = "  agrees" if judge_pass == people_pass else "  DIFFERS"
            print(f"  {row['id']}: {metric}: judge {judge}; {people}{verdict}", file=sys.stderr)
    if compared:
        print(f"demo: the offline judge agrees with the labels on {agree} of {compared} verdicts here "
              "(its agreement on the labelled development rows, out of fold: docs/quality.md)", file=sys.stderr)
    return agree, compared


def main() -> int:
    print("$ ragjudge " + " ".join(COMMAND), file=sys.stderr, flush=True)
    code = subprocess.call([sys.executable, "-m", "ragjudge", *COMMAND])
    verdict = {0: "gate passed", 1: "gate failed on the sample data (the run worked)"}.get(code)
    if verdict is None:
        print(f"demo: ragjudge score exited {code}: the run did not work", file=sys.stderr)
        return code
    show_labels()
    show_diagnosis()
    print(f"demo: {verdict}; scored table in out/demo_scored.parquet, summary in out/demo_summary.json, "
          "report in out/demo_report.html. All 32 sample rows: ragjudge score sample_data/rag_eval.jsonl -c local; "
          "8 whole RAG rows, a diagnosis each: ragjudge score sample_data/rag_whole.jsonl -c local", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
