"""Issue 63's measurement: ``passage_relevance`` and ``sufficient_k`` with the embedded judge on
rows built from the bundled CLAPNQ positives (``clapnq_sufficiency_dev.jsonl``, human label
``label_sufficient`` true: annotators found the answer in that passage).

Each row: one CLAPNQ question, its own passage (the gold passage) placed at a random rank among
``--passages - 1`` passages of other CLAPNQ questions (positives and negatives alike). The labels
are constructed from the human ones: the gold passage is relevant and sufficient; another
question's passage is neither (it is about another question). Prints, with 95% Wilson intervals:

- passage_relevance: per-passage accuracy against those labels, recall of the gold passage,
  the share of other questions' passages judged relevant, the share of rows whose first relevant
  passage is the gold one, and the AUC of P(relevant) (Mann-Whitney);
- sufficient_k: the share of rows whose k equals the gold rank, whose k is at most the gold rank,
  never sufficient, flagged not monotone; the calls per row beyond the whole context's.

    python bench/passages.py [--rows 20] [--passages 4] [--seed 63] [--config configs/local.yaml]

Runs ``ragjudge score`` (the response cache of ``--cache-dir``, default a folder of its own); on 2
CPU cores the embedded judge takes about a minute a row at 4 passages.
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
from itertools import zip_longest
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def wilson(hits: int, n: int) -> str:
    from scipy.stats import binomtest

    if not n:
        return "n/a (n 0)"
    low, high = binomtest(hits, n).proportion_ci(method="wilson")
    return f"{hits / n:.2f} [{low:.2f}, {high:.2f}] ({hits}/{n})"


def build(data: Path, rows: int, passages: int, seed: int) -> list[dict]:
    every = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    gold = [r for r in every if r["label_sufficient"] is True]
    rng = random.Random(seed)
    chosen = rng.sample(gold, rows)
    built = []
    for row in chosen:
        others = rng.sample([r for r in every if r["id"] != row["id"]], passages - 1)
        rank = rng.randint(1, passages)
        context = [str(o["context"]) for o in others]
        context.insert(rank - 1, str(row["context"]))
        built.append({"id": row["id"], "request": row["request"], "context": context, "gold_rank": rank})
    return built


def build_human(data: Path, rows: int, seed: int) -> list[dict]:
    """CLAPNQ rows as they are, one passage each, half of each human label (``label_sufficient``:
    the annotators found the answer in that passage, or none in its page): per-passage relevance
    against a human label on the very passage judged. ``gold_rank`` is 1 where the label is true,
    0 where it is false (no passage holds the answer)."""
    every = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(seed)
    chosen = []
    for label in (True, False):
        chosen += rng.sample([r for r in every if r["label_sufficient"] is label], rows // 2)
    rng.shuffle(chosen)
    return [{"id": r["id"], "request": r["request"], "context": [str(c) for c in r["context"]][:1],
             "gold_rank": 1 if r["label_sufficient"] else 0} for r in chosen]


def build_squad(data: Path, rows: int, seed: int) -> list[dict]:
    """SQuAD 2.0 gold-removed rows whose gold paragraph was kept (``label_sufficient`` true): two
    paragraphs of one article, the one the annotators' answer span is in (``gold_answers``) and
    another; ``gold_rank`` is the rank of the one holding an answer."""
    every = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [r for r in every if r["label_sufficient"] is True]
    chosen = random.Random(seed).sample(kept, min(rows, len(kept)))
    built = []
    for row in chosen:
        holds = [any(a.lower() in p.lower() for a in row["gold_answers"]) for p in row["context"]]
        if holds.count(True) != 1:
            continue
        built.append({"id": row["id"], "request": row["request"], "context": row["context"], "gold_rank": holds.index(True) + 1})
    return built


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "clapnq_sufficiency_dev.jsonl"))
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--passages", type=int, default=4)
    parser.add_argument("--seed", type=int, default=63)
    parser.add_argument("--config", default=str(ROOT / "configs" / "local.yaml"))
    parser.add_argument("--cache-dir", default=str(Path(tempfile.gettempdir()) / "ragjudge-bench-passages"))
    parser.add_argument("--out", default=None, help="the scored table (JSON Lines); default: a temporary file")
    parser.add_argument("--squad", default=None, help="passage_relevance alone on SQuAD 2.0 gold-removed rows that kept their gold "
                                                      "paragraph (squad2_goldremoved_sufficiency_dev.jsonl): the answer's paragraph "
                                                      "against another of its article")
    parser.add_argument("--set", action="append", default=[], dest="sets", metavar="KEY=VALUE",
                        help="passed to ragjudge score's --set (e.g. sufficiency.yes_threshold=0.5); repeatable")
    parser.add_argument("--k-only", action="store_true", help="sufficient_k alone (no passage_relevance call): the k figures only")
    parser.add_argument("--human", action="store_true", help="passage_relevance alone on CLAPNQ's own rows, one passage each, half of "
                                                                 "each human label: agreement with the annotators on the passage judged")
    args = parser.parse_args()

    if args.squad:
        rows = build_squad(Path(args.squad), args.rows, args.seed)
    elif args.human:
        rows = build_human(Path(args.data), args.rows, args.seed)
    else:
        rows = build(Path(args.data), args.rows, args.passages, args.seed)
    alone = bool(args.squad or args.human)
    k_only = args.k_only and not alone
    work = Path(tempfile.mkdtemp(prefix="ragjudge-passages-"))
    source = work / "rows.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = Path(args.out) if args.out else work / "scored.jsonl"
    summary = work / "summary.json"
    metrics = ["-m", "passage_relevance"] if alone else ["-m", "sufficient_k"] if k_only else ["-m", "passage_relevance", "-m", "sufficient_k"]
    command = [sys.executable, "-m", "ragjudge", "score", str(source), "-c", args.config, *metrics,
               "--set", "passage_relevance.yes_threshold=0.5", "--min-pass-rate", "0", "--max-error-rate", "1", "--cache-dir", args.cache_dir,
               "-o", str(out), "--summary-json", str(summary), "-q",
               *(item for pair in args.sets for item in ("--set", pair))]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    took = time.monotonic() - started
    if done.returncode not in (0, 1):
        sys.exit(f"ragjudge score exited {done.returncode}:\n{done.stderr[-3000:]}")
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()]
    figures = json.loads(summary.read_text(encoding="utf-8"))

    marks, p_gold, p_other = [], [], []
    first_is_gold = relevance_rows = 0
    for row in scored:
        if row.get("passage_relevance_status") != "ok":
            continue
        relevance_rows += 1
        gold = row["gold_rank"]
        for rank, (verdict, p) in enumerate(zip_longest(row["passage_relevance_verdicts"], row.get("passage_relevance_p_relevant") or []), 1):
            marks.append((rank == gold, verdict == "yes"))
            if p is not None:
                (p_gold if rank == gold else p_other).append(float(p))
        first_is_gold += (row["passage_relevance_first_relevant"] or 0) == gold
    k_rows = [r for r in scored if r.get("sufficient_k_status") == "ok"]
    equal = sum(1 for r in k_rows if r["sufficient_k_k"] == r["gold_rank"])
    within = sum(1 for r in k_rows if r["sufficient_k_k"] is not None and r["sufficient_k_k"] <= r["gold_rank"])
    never = sum(1 for r in k_rows if r["sufficient_k_never"])
    odd = sum(1 for r in k_rows if r["sufficient_k_monotone"] is False)
    beyond = [len((r["sufficient_k_probes"] or "").split()) - 1 for r in k_rows]

    shape = ("SQuAD 2.0: the answer's paragraph and another of its article" if args.squad else
             "CLAPNQ rows as they are, one passage each, half of each human label" if args.human else
             f"{args.passages} passages each, gold at a random rank")
    print(f"rows {len(rows)} ({shape}; seed {args.seed}); judge {args.config}; "
          f"{took:.0f} s; provider calls {figures.get('provider_calls')}")
    if not k_only:
        print("passage_relevance (passage_relevance.yes_threshold 0.5):")
        print(f"  rows ok {relevance_rows} of {len(rows)}")
        print(f"  per-passage accuracy   {wilson(sum(1 for label, said in marks if label == said), len(marks))}")
        print(f"  gold passage relevant  {wilson(sum(1 for label, said in marks if label and said), sum(1 for label, _ in marks if label))}")
        print(f"  other passage relevant {wilson(sum(1 for label, said in marks if not label and said), sum(1 for label, _ in marks if not label))}")
        print(f"  first relevant is gold {wilson(first_is_gold, relevance_rows)}")
        if p_gold and p_other:
            from scipy.stats import mannwhitneyu

            auc = mannwhitneyu(p_gold, p_other).statistic / (len(p_gold) * len(p_other))
            print(f"  AUC of P(relevant)     {auc:.2f} ({len(p_gold)} gold, {len(p_other)} other passages)")
    if alone:
        return
    print("sufficient_k (the sufficiency settings of the config):")
    print(f"  rows ok {len(k_rows)} of {len(rows)}")
    print(f"  k = gold rank          {wilson(equal, len(k_rows))}")
    print(f"  k <= gold rank         {wilson(within, len(k_rows))}")
    print(f"  never sufficient       {wilson(never, len(k_rows))}")
    print(f"  not monotone           {wilson(odd, len(k_rows))}")
    if beyond:
        print(f"  calls beyond the whole context's: mean {sum(beyond) / len(beyond):.2f}, most {max(beyond)}")
    prefixes = (figures.get("metrics", {}).get("sufficient_k") or {}).get("sufficient_k")
    if prefixes:
        print(f"  summary: {json.dumps(prefixes)}")


if __name__ == "__main__":
    main()
