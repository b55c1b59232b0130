"""The embedded judge as a cascade's first stage: the accept-or-escalate curve (issue 62).

On the pooled reference-free sufficiency rows of bench/quality.py (CLAPNQ and SQuAD 2.0
unanswerable, the calibration rows left out), the embedded judge's cached replies give each
row's P(yes) and its verdict with the shipped settings (configs/local.yaml). For each escalation
budget, ``ragjudge.cascade.fit_band`` fits the band out of fold (5 folds, seed 0) and reports
the agreement with the labels if the escalated rows were decided right (the upper bound an
accept-or-escalate study reports: the strong stage's own accuracy is not measured here), with
its 95% Wilson interval. Reads the response cache only (run ``bash bench/agreement.sh`` first),
or ``--table``: a table the embedded judge scored with ``sufficiency_p_yes``, ``sufficiency_passed``
and ``label_sufficient`` (bench/calibration_curve.py's ``bench/_work/calibration/table.parquet``):

    python bench/cascade_curve.py [--data ../shared/data] [--config configs/local.yaml] [--table T]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, WORK, machine  # noqa: E402
from quality import CALIBRATION, SUFFICIENCY, Judged, load  # noqa: E402

BUDGETS = [0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5]


def main() -> None:
    from ragjudge.cascade import fit_band

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--config", default="configs/local.yaml")
    parser.add_argument("--table", help="a scored table (sufficiency_p_yes, sufficiency_passed, label_sufficient) instead of the cache")
    args = parser.parse_args()
    p, first, labels = [], [], []
    total = 0
    if args.table:
        import pandas as pd

        table = pd.read_parquet(args.table)
        total = len(table)
        for p_yes, passed, label in zip(table["sufficiency_p_yes"], table["sufficiency_passed"], table["label_sufficient"]):
            if pd.isna(p_yes) or pd.isna(passed):
                continue
            p.append(float(p_yes))
            first.append(bool(passed) == bool(label))
            labels.append(bool(label))
    judged = None if args.table else Judged(args.config, cached_only=True)
    for name, mode in [] if judged is None else SUFFICIENCY:
        if mode != "reference_free":
            continue
        rows = [r for r in load(Path(args.data), name) if r["id"] not in CALIBRATION]
        total += len(rows)
        for row, item in zip(rows, judged.raw(rows, "sufficiency")):
            if item[2] is None or (item[2].details or {}).get("p_yes") is None:
                continue
            verdict = judged.decided(item)
            p.append(float(item[2].details["p_yes"]))
            first.append(bool(verdict.score >= 0.5) == bool(row["label_sufficient"]))
            labels.append(bool(row["label_sufficient"]))
    print(f"{len(p)} rows with a cached reply and P(yes) (of {total}); first stage alone: agreement {sum(first) / len(p):.3f}; "
          f"{machine()}")
    out = []
    print("| escalation budget | band (fitted on all rows) | escalated, out of fold | agreement, out of fold [95%] | on all rows |")
    print("|---|---|---|---|---|")
    for budget in BUDGETS:
        fit = fit_band(p, first, [True] * len(p), max_escalate=budget)
        out.append({"budget": budget, "band": fit.band, "oof_escalated": fit.oof_escalated, "oof_agreement": fit.oof_agreement,
                    "oof_interval": fit.oof_interval, "agreement": fit.agreement, "escalated": fit.escalated})
        print(f"| {budget:.2f} | [{fit.band[0]:g}, {fit.band[1]:g}] | {fit.oof_escalated:.2f} | {fit.oof_agreement:.2f} "
              f"[{fit.oof_interval[0]:.2f}, {fit.oof_interval[1]:.2f}] | {fit.agreement:.2f} at {fit.escalated:.2f} |")
    folder = WORK / "cascade"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "curve.json").write_text(json.dumps({"n": len(p), "first_alone": sum(first) / len(p), "curve": out}, indent=2))


if __name__ == "__main__":
    main()
