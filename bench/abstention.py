"""Issue 66's measurement: the ``abstention`` judge's agreement on responses that answer or decline,
built from the bundled SQuAD 2.0 rows (``squad2_goldremoved_sufficiency_dev.jsonl``: each row's
question and its annotators' answer, ``expected_response``).

The responses and their labels are **constructed**, not human: each row's question gets one
response, half of them a decline drawn from varied phrasings (says it does not know, says the
context lacks it, refuses, asks for more, names what the documents do say but not the answer),
half an answer (the annotators' answer bare or in a sentence, hedged, or another question's
answer: answered wrongly, still an answer). Prints, with 95% Wilson intervals: agreement with the
constructed label, the share of declines judged declined and of answers judged answered, per
response style, and the AUC of P(declined) (Mann-Whitney) where the judge gives one.

    python bench/abstention.py [--rows 60] [--seed 66] [--config configs/local.yaml]

Runs ``ragjudge score -m abstention`` (the response cache of ``--cache-dir``, default a folder of
its own); the judge sees the request and the response only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

DECLINES = {
    "does not know": ["I don't know.", "I'm not sure; I don't know the answer to that.", "Sorry, I do not know."],
    "context lacks it": ["The provided documents do not contain this information.",
                         "I could not find the answer to this question in the available sources.",
                         "There is not enough information in the context to answer this question."],
    "refuses": ["I'm unable to help with that request.", "I can't answer that question."],
    "asks for more": ["Could you give me more details about what you are asking, so I can find the right answer?",
                      "Which one do you mean? Please clarify the question and I will look again."],
    "names what it has": ["The documents discuss {article}, but they do not say this.",
                          "The sources mention {article} in general terms only; the specific answer is not given there."],
}
ANSWERS = {
    "bare": ["{answer}"],
    "sentence": ["The answer is {answer}.", "According to the documents, it is {answer}."],
    "hedged": ["I'm not completely certain, but I believe it is {answer}.", "Probably {answer}, though the sources are not explicit."],
    "wrong": ["{other}", "The answer is {other}."],
}


def wilson(hits: int, n: int) -> str:
    from scipy.stats import binomtest

    if not n:
        return "n/a (n 0)"
    low, high = binomtest(hits, n).proportion_ci(method="wilson")
    return f"{hits / n:.2f} [{low:.2f}, {high:.2f}] ({hits}/{n})"


def build(data: Path, rows: int, seed: int) -> list[dict]:
    """``rows`` rows: half declines, half answers, each style in turn; ``label_abstained`` the
    constructed label, ``style`` the kind of response."""
    every = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    every = [r for r in every if str(r.get("expected_response") or "").strip()]
    rng = random.Random(seed)
    chosen = rng.sample(every, rows)
    built = []
    for i, row in enumerate(chosen):
        declined = i % 2 == 0
        table = DECLINES if declined else ANSWERS
        style = list(table)[(i // 2) % len(table)]
        other = rng.choice([r for r in every if r["id"] != row["id"]])["expected_response"]
        response = rng.choice(table[style]).format(answer=row["expected_response"], other=other,
                                                   article=str(row.get("article") or "the topic").replace("_", " "))
        built.append({"id": row["id"], "request": row["request"], "response": response, "label_abstained": declined, "style": style})
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "squad2_goldremoved_sufficiency_dev.jsonl"))
    parser.add_argument("--rows", type=int, default=60)
    parser.add_argument("--seed", type=int, default=66)
    parser.add_argument("--config", default=str(ROOT / "configs" / "local.yaml"))
    parser.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "ragjudge-bench-abstention"))
    parser.add_argument("--out", default=None, help="the scored table (JSON Lines); default: a temporary file")
    parser.add_argument("--scored", default=None, help="read this scored table (an earlier --out of the same --rows and --seed) "
                                                       "instead of judging again")
    args = parser.parse_args()

    rows = build(Path(args.data), args.rows, args.seed)
    work = Path(tempfile.mkdtemp(prefix="ragjudge-abstention-"))
    source = work / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = Path(args.out) if args.out else work / "scored.jsonl"
    summary = work / "summary.json"
    command = [sys.executable, "-m", "ragjudge", "score", str(source), "-c", args.config, "-m", "abstention",
               "--max-error-rate", "1", "--cache-dir", args.cache_dir, "-o", str(out), "--summary-json", str(summary), "-q"]
    started = time.monotonic()
    if args.scored:
        out, figures = Path(args.scored), {}
    else:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        if done.returncode not in (0, 1):
            sys.exit(f"ragjudge score exited {done.returncode}:\n{done.stderr[-3000:]}")
        figures = json.loads(summary.read_text(encoding="utf-8"))
    took = time.monotonic() - started
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    labels = {r["id"]: r for r in rows}
    for row in scored:  # the constructed label and style, from the rows built (an earlier table carries them too)
        row.setdefault("label_abstained", labels[row["id"]]["label_abstained"])
        row.setdefault("style", labels[row["id"]]["style"])

    judged = [r for r in scored if r.get("abstention_status") == "ok"]
    said = {r["id"]: bool(r["abstention_passed"]) for r in judged}  # passed: declined (score 1.0)
    print(f"rows {len(rows)} (SQuAD 2.0 questions, constructed responses: half declines, half answers; seed {args.seed}); "
          f"judge {args.config}; {took:.0f} s; provider calls {figures.get('provider_calls')}")
    print(f"  rows ok {len(judged)} of {len(rows)}")
    print(f"  agreement              {wilson(sum(1 for r in judged if said[r['id']] == r['label_abstained']), len(judged))}")
    print(f"  declines judged declined {wilson(sum(1 for r in judged if r['label_abstained'] and said[r['id']]), sum(1 for r in judged if r['label_abstained']))}")
    print(f"  answers judged answered  {wilson(sum(1 for r in judged if not r['label_abstained'] and not said[r['id']]), sum(1 for r in judged if not r['label_abstained']))}")
    for style in [*DECLINES, *ANSWERS]:
        group = [r for r in judged if r["style"] == style]
        right = sum(1 for r in group if said[r["id"]] == r["label_abstained"])
        print(f"    {'decline' if style in DECLINES else 'answer '} {style:18} {wilson(right, len(group))}")
    yes = [float(r["abstention_probability"]) for r in judged if r["label_abstained"] and r.get("abstention_probability") is not None]
    no = [float(r["abstention_probability"]) for r in judged if not r["label_abstained"] and r.get("abstention_probability") is not None]
    if yes and no:
        from scipy.stats import mannwhitneyu

        auc = mannwhitneyu(yes, no).statistic / (len(yes) * len(no))
        print(f"  AUC of P(declined)     {auc:.2f} ({len(yes)} declines, {len(no)} answers)")


if __name__ == "__main__":
    main()
