"""Label-corrected pass rates on real human labels (issue 48): does the corrected interval cover
the true human pass rate of a whole slice when a random 100 of its rows are labelled?

For each human-labelled sufficiency slice of ../shared/data (CLAPNQ, SQuAD 2.0 unanswerable,
SQuAD 2.0 gold-removed: 250 development rows each, label ``label_sufficient``), every row is
judged once, then ``--draws`` times a random ``--labelled`` rows keep their human label and the
rest are treated as unlabelled; ``ragjudge.corrected_rates.RateStats`` gives the corrected pass rate
and its 95% interval. Printed per slice: the true human pass rate of the slice, the judge's own
pass rate (its bias), the share of draws whose corrected interval covers the truth, the mean
interval width, and the labelled rows' own (classical) interval's coverage and width.

The judge here is the project's fake word-overlap rule (``ragjudge.transports.fake``, in-process:
seconds, no model): a deliberately crude, biased judge, which is the case the correction is for.
Its verdicts say nothing about any real judge's quality. The embedded judge's replies on these
rows take hours of CPU on 2 cores (docs/quality.md); with them in the cache, ``--model
local/qwen2.5-coder-1.5b -c configs/local.yaml`` runs the same study on that judge.

    python bench/corrected_rates.py [--data ../shared/data] [--labelled 100] [--draws 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

from _common import ROOT, machine

SLICES = ["clapnq_sufficiency_dev", "squad2_unanswerable_sufficiency_dev", "squad2_goldremoved_sufficiency_dev"]


def judged(rows: list[dict], model: str | None, config: str | None) -> list[bool | None]:
    """Each row's pass (None: not judged ok) by the fake rule in-process, or by ``model``."""
    import pandas as pd

    from ragjudge.scoring import Scorer
    from ragjudge.settings import load_config

    settings = load_config(config)
    settings = settings.model_copy(update={"metrics": ["sufficiency"]})
    transport = None
    if model is None:
        from ragjudge.transports.fake import FakeTransport

        transport = FakeTransport()
    else:
        settings = settings.model_copy(update={"judge": settings.judge.model_copy(update={"model": model})})
    scorer = Scorer(settings, transport=transport)
    try:
        frame = scorer.score(pd.DataFrame(rows)).frame
    finally:
        scorer.close()
    return [None if status != "ok" else bool(passed) for status, passed in zip(frame["sufficiency_status"], frame["sufficiency_passed"])]


def study(passes: list[bool | None], labels: list[bool], labelled: int, draws: int, seed: int) -> dict[str, float]:
    from ragjudge.corrected_rates import RateStats

    rows = [i for i, p in enumerate(passes) if p is not None]
    truth = sum(labels[i] for i in rows) / len(rows)
    judge = sum(passes[i] for i in rows) / len(rows)  # type: ignore[misc]
    rng = random.Random(seed)
    covered = labels_covered = 0
    widths, label_widths, estimates = [], [], []
    for _ in range(draws):
        chosen = set(rng.sample(rows, labelled))
        stats = RateStats()
        for i in rows:
            stats.add(float(passes[i]), float(labels[i]) if i in chosen else None)  # type: ignore[arg-type]
        found = stats.corrected()
        assert found.valid and found.low is not None and found.high is not None and found.labels_interval is not None
        covered += found.low <= truth <= found.high
        low, high = found.labels_interval
        labels_covered += low <= truth <= high
        widths.append(found.high - found.low)
        label_widths.append(high - low)
        estimates.append(found.estimate)
    return {"rows": len(rows), "truth": truth, "judge": judge, "coverage": covered / draws, "width": statistics.mean(widths),
            "labels_coverage": labels_covered / draws, "labels_width": statistics.mean(label_widths),
            "mean_estimate": statistics.mean(estimates)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--labelled", type=int, default=100)
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default=None, help="a judge model whose replies are cached (default: the fake rule, in-process)")
    parser.add_argument("-c", "--config", default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(f"machine: {machine()}; judge: {args.model or 'the fake word-overlap rule (crude, biased on purpose)'}; "
          f"{args.labelled} random rows labelled, {args.draws} draws")
    for name in SLICES:
        rows = [json.loads(line) for line in open(args.data / f"{name}.jsonl", encoding="utf-8")]
        labels = [bool(row["label_sufficient"]) for row in rows]
        for row in rows:
            row.pop("label_sufficient", None)
        found = study(judged(rows, args.model, args.config), labels, args.labelled, args.draws, args.seed)
        print(f"{name}: {found['rows']} rows judged ok; human pass rate {found['truth']:.3f}, the judge's {found['judge']:.3f} "
              f"(bias {found['judge'] - found['truth']:+.3f}); corrected: mean {found['mean_estimate']:.3f}, 95% interval covers the "
              f"truth in {found['coverage']:.3f} of draws, mean width {found['width']:.3f}; the labelled rows alone: coverage "
              f"{found['labels_coverage']:.3f}, width {found['labels_width']:.3f}", flush=True)


if __name__ == "__main__":
    main()
