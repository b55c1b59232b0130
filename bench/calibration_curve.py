"""The embedded judge's calibration curve on the bundled labelled reference-free sufficiency rows
(issue 61): how often a row the judge gives P(yes) = p is labelled sufficient, per bin of p.

Rows: the reference-free slices bench/quality.py pools (CLAPNQ and SQuAD 2.0 unanswerable,
../shared/data), minus the calibration rows that chose earlier prompts and thresholds
(bench/calibration_ids.txt); a seeded random sample of ``--per-slice`` rows of each (the
embedded judge takes seconds a call on 2 shared cores). Each row is judged once by the embedded
judge (configs/local.yaml) through a response cache of this script's own
(bench/_work/calibration/cache: a re-run is answered from it), in chunks, the table written after
each chunk (bench/_work/calibration/table.parquet). The curve is then made from the table's
``sufficiency_probability`` against ``label_sufficient`` by ``ragjudge.counting.calibration_curve``
(the summary's own code: equal-width bins, Wilson 95% interval of the observed share per bin,
and the Brier score).

    python bench/calibration_curve.py [--per-slice 60] [--seed 0] [--bins 10] [--curve-only]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from _common import ROOT, WORK, machine

SLICES = [("clapnq_sufficiency_dev", "CLAPNQ"), ("squad2_unanswerable_sufficiency_dev", "SQuAD 2.0 unanswerable")]
CALIBRATION = {line.strip() for line in open(Path(__file__).with_name("calibration_ids.txt"), encoding="utf-8")
               if line.strip() and not line.startswith("#")}
OUT = WORK / "calibration"
KEEP = ["id", "source_slice", "label_sufficient", "sufficiency", "sufficiency_status", "sufficiency_passed",
        "sufficiency_probability", "sufficiency_p_yes", "sufficiency_mode"]


def sample(data: Path, per_slice: int, seed: int) -> list[dict]:
    """``per_slice`` rows of each reference-free slice (calibration rows left out), drawn by
    ``random.Random(seed)``, slices interleaved so a partial run covers both."""
    drawn = []
    for name, label in SLICES:
        rows = [json.loads(line) for line in open(data / f"{name}.jsonl", encoding="utf-8")]
        rows = [dict(r, source_slice=label) for r in rows if r["id"] not in CALIBRATION]
        random.Random(seed).shuffle(rows)
        drawn.append(rows[:per_slice])
    return [row for pair in zip(*drawn) for row in pair]


def score(rows: list[dict], chunk: int) -> None:
    """Judge ``rows`` with the embedded judge, ``chunk`` rows at a time, writing the table so far
    after each chunk."""
    import pandas as pd

    from ragjudge.config import read_raw_config
    from ragjudge.scoring import Scorer

    config = read_raw_config(ROOT / "configs" / "local.yaml")
    config = config.model_copy(update={"metrics": ["sufficiency"],
                                       "cache": config.cache.model_copy(update={"dir": str(OUT / "cache")})})
    frames = []
    started = time.monotonic()
    for at in range(0, len(rows), chunk):
        part = pd.DataFrame(rows[at:at + chunk])
        scorer = Scorer(config)
        try:
            scored = scorer.score(part.drop(columns=["label_sufficient", "label_completeness", "expected_facts",
                                                     "expected_response"], errors="ignore"))
        finally:
            scorer.close()
        table = scored.frame if hasattr(scored, "frame") else scored
        table = table.copy()
        table["id"] = part["id"].to_numpy()
        table["source_slice"] = part["source_slice"].to_numpy()
        table["label_sufficient"] = part["label_sufficient"].to_numpy()
        frames.append(table[[c for c in KEEP if c in table.columns]])
        pd.concat(frames, ignore_index=True).to_parquet(OUT / "table.parquet")
        print(f"{at + len(part)} of {len(rows)} rows judged, {time.monotonic() - started:.0f} s", flush=True)


def curve(bins: int) -> dict:
    """The calibration curve of the table written by ``score``: ``ragjudge.corrected_rates.ProbabilityStats``
    (the summary's own code) over the rows judged ok with a probability, against ``label_sufficient``;
    per slice and pooled."""
    import pandas as pd

    from ragjudge import corrected_rates

    table = pd.read_parquet(OUT / "table.parquet")
    column = "sufficiency_probability" if table["sufficiency_probability"].notna().any() else "sufficiency_p_yes"
    out = {"rows": len(table), "ok": int((table["sufficiency_status"] == "ok").sum()), "column": column, "slices": {}}
    for name, part in [("pooled", table), *((label, table[table["source_slice"] == label]) for _, label in SLICES)]:
        stats = corrected_rates.ProbabilityStats(bins=bins)
        usable = part[(part["sufficiency_status"] == "ok") & part[column].notna()]
        for p, label in zip(usable[column], usable["label_sufficient"]):
            stats.add(float(p))
            stats.add_label(float(p), float(bool(label)))
        base = float(usable["label_sufficient"].mean()) if len(usable) else None
        accuracy = float((usable["sufficiency_passed"].astype(bool) == usable["label_sufficient"].astype(bool)).mean()) if len(usable) else None
        out["slices"][name] = {**stats.to_dict(), "base_rate": base, "brier_of_base_rate": None if base is None else base * (1 - base),
                               "verdict_accuracy": accuracy}
    return out


def markdown(found: dict) -> str:
    lines = []
    for name, figures in found["slices"].items():
        if not figures.get("labelled"):
            continue
        lines += [f"**{name}**: {figures['labelled']} rows, Brier {figures['brier']:.3f} (always saying the base rate "
                  f"{figures['base_rate']:.2f}: {figures['brier_of_base_rate']:.3f}), mean P(yes) {figures['mean']:.2f}, "
                  f"verdict accuracy at the shipped yes_threshold {figures['verdict_accuracy']:.2f}", "",
                  "| P(yes) bin | rows | mean P(yes) | labelled sufficient | 95% interval (Wilson) |", "|---|---:|---:|---:|---|"]
        lines += [f"| {b['low']:.1f}-{b['high']:.1f} | {b['rows']} | {b['mean_probability']:.2f} | {b['observed']:.2f} | "
                  f"[{b['interval'][0]:.2f}, {b['interval'][1]:.2f}] |" for b in figures["curve"]]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--per-slice", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=10)
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--curve-only", action="store_true", help="judge nothing: make the curve from the table written before")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    if not args.curve_only:
        score(sample(Path(args.data), args.per_slice, args.seed), args.chunk)
    found = curve(args.bins)
    found.update(machine=machine(), per_slice=args.per_slice, seed=args.seed, bins=args.bins)
    (OUT / "curve.json").write_text(json.dumps(found, indent=2))
    print(markdown(found))
    print(machine())


if __name__ == "__main__":
    main()
