"""Where configs/local.yaml's decision thresholds come from: score the calibration rows
(bench/calibration_ids.txt, which bench/agreement.py leaves out) with the embedded judge,
then print accuracy for each candidate threshold.

- reference-free sufficiency (clapnq, squad2-unanswerable): ``sufficiency.yes_threshold`` on
  P(yes) at the verdict token;
- grounded sufficiency (squad2-goldremoved): ``sufficiency.fact_threshold`` on each fact's
  P(supported), alone and combined with the ``sufficiency.fact_evidence`` check.

Scoring goes through the response cache, so a second run is instant.

    python bench/calibrate.py [--config configs/local.yaml] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _common import ROOT, WORK
from agreement import CALIBRATION, ragjudge

SLICES = {
    "reference-free": ["clapnq_sufficiency_dev", "squad2_unanswerable_sufficiency_dev"],
    "grounded": ["squad2_goldremoved_sufficiency_dev"],
}
CUTS = [round(0.50 + 0.01 * i, 2) for i in range(50)]


def score(rows: list[dict], name: str, config: str) -> list[dict]:
    """Scored rows with P(yes) read (thresholds set, evidence check off), via the cache."""
    import yaml

    settings = yaml.safe_load(open(ROOT / config, encoding="utf-8"))
    section = settings.setdefault("sufficiency", {})
    section["fact_evidence"] = None
    section.setdefault("yes_threshold", 0.5)
    section.setdefault("fact_threshold", 0.5)
    out = WORK / "calibration"
    out.mkdir(parents=True, exist_ok=True)
    source, scored = out / f"{name}.jsonl", out / f"{name}.scored.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        yaml.safe_dump(settings, handle)
    done = ragjudge("score", str(source), "-o", str(scored), "-c", handle.name, "-m", "sufficiency",
                    "--min-pass-rate", "0", "--max-error-rate", "1", "-q")
    Path(handle.name).unlink()
    if done.returncode not in (0, 1):
        raise SystemExit(f"{name}: scoring failed (exit {done.returncode}): {done.stderr.strip()}")
    return [json.loads(line) for line in open(scored, encoding="utf-8")]


def sweep(points: list[tuple[float, bool]]) -> list[tuple[float, float, float]]:
    """(cut, accuracy, yes rate) for each cut, over (probability, label) points."""
    table = []
    for cut in CUTS:
        hits = sum((p >= cut) == label for p, label in points)
        yes = sum(p >= cut for p, _ in points)
        table.append((cut, hits / len(points), yes / len(points)))
    return table


def report(title: str, points: list[tuple[float, bool]]) -> None:
    from sklearn.metrics import roc_auc_score

    labels = [label for _, label in points]
    auc = roc_auc_score(labels, [p for p, _ in points]) if len(set(labels)) == 2 else float("nan")
    table = sweep(points)
    best = max(acc for _, acc, _ in table)
    best_cuts = [cut for cut, acc, _ in table if acc == best]
    print(f"{title}: n {len(points)}, ROC AUC {auc:.2f}, best accuracy {best:.2f} at {best_cuts[0]:.2f}..{best_cuts[-1]:.2f}")
    for cut, acc, yes in table[::5]:
        print(f"    cut {cut:.2f}: accuracy {acc:.2f}, yes rate {yes:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/local.yaml")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--evidence", type=float, default=0.5, help="fact_evidence share to combine with (grounded)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from ragjudge.judges.sufficiency import evidence_share

    ids = CALIBRATION
    pooled: list[tuple[float, bool]] = []
    for name in SLICES["reference-free"]:
        rows = [r for r in map(json.loads, open(Path(args.data) / f"{name}.jsonl", encoding="utf-8")) if r["id"] in ids]
        scored = score(rows, name, args.config)
        points = [(r["sufficiency_p_yes"], bool(r["label_sufficient"])) for r in scored if r["sufficiency_p_yes"] is not None]
        report(f"{name} (yes_threshold)", points)
        pooled += points
    report("reference-free pooled (yes_threshold)", pooled)
    for name in SLICES["grounded"]:
        rows = [r for r in map(json.loads, open(Path(args.data) / f"{name}.jsonl", encoding="utf-8")) if r["id"] in ids]
        scored = score(rows, name, args.config)
        alone, combined = [], []
        for r in scored:
            if r["sufficiency_p_yes"] is None:
                continue
            label = bool(r["label_sufficient"])
            facts = r.get("expected_facts") or [r["expected_response"]]
            share = min(evidence_share(f, r["context"]) for f in facts)
            alone.append((r["sufficiency_p_yes"], label))
            combined.append((r["sufficiency_p_yes"] if share >= args.evidence else 0.0, label))
        report(f"{name} (fact_threshold alone)", alone)
        report(f"{name} (fact_threshold with fact_evidence {args.evidence})", combined)


if __name__ == "__main__":
    main()
