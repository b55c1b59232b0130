"""Judge quality that holds on rows nobody has seen: the embedded judge's agreement with human
labels, its decision thresholds chosen by cross-validation (issue 21).

Rows: every development row of ../shared/data never used for a choice, i.e. all but the
calibration rows that chose earlier prompts and thresholds (bench/calibration_ids.txt) and the
24 SQuALITY rows that chose the completeness design (``design_rows``). Each row is scored once by
the embedded judge (configs/local.yaml) through the response cache; the judge's raw verdicts
(its written verdict and its token probabilities) are then read back from the cache, and every
decision is made again by the judges' own ``decide`` with each candidate setting.

Thresholds are chosen by stratified k-fold cross-validation (k = 5, seed 0): in each fold the
setting with the best accuracy on the other folds is applied to the held-out fold, and the
figure reported is the out-of-fold accuracy (with its Wilson 95% interval and n), never the
accuracy on the rows a threshold was fitted to. The setting to ship is the one fitted on all
rows; where the out-of-fold figure is no better than the written verdicts (or than always
answering the majority class) the threshold does not generalise, and the script says so.

- reference-free sufficiency (CLAPNQ, SQuAD 2.0 unanswerable, pooled): ``sufficiency.yes_threshold``;
- grounded sufficiency (SQuAD 2.0 gold-removed): ``sufficiency.fact_threshold`` with
  ``sufficiency.fact_evidence``;
- completeness (SQuALITY): Spearman, Pearson, MAE, within one point (no choice: all rows),
  and the pass mark's agreement with "human rating >= 3", the pass mark itself chosen out of
  fold; RAGChecker pairs: sign agreement with the human preference.

    python bench/quality.py [--data ../shared/data] [--config configs/local.yaml] [--folds 5] [--cached-only]

Everything is answered from the response cache once the rows have been scored (the first run
scores them with the embedded model: hours on 2 cores). Writes bench/_work/quality/summary.json.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from _common import ROOT, WORK, machine

SUFFICIENCY = [("squad2_goldremoved_sufficiency_dev", "grounded"), ("clapnq_sufficiency_dev", "reference_free"),
               ("squad2_unanswerable_sufficiency_dev", "reference_free")]
CALIBRATION = {line.strip() for line in open(Path(__file__).with_name("calibration_ids.txt"), encoding="utf-8")
               if line.strip() and not line.startswith("#")}


def load(data: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in open(data / f"{name}.jsonl", encoding="utf-8")]


def design_ids(data: Path) -> set[str]:
    """The 24 SQuALITY rows on which bench/completeness_variants.py chose the two-call design
    (the same choice as bench/agreement.py made it: seed 0 for a 40-row held-out sample, seed 1
    for the design rows outside it)."""
    rows = load(data, "squality_completeness_dev")
    shuffled = [r for r in rows if r["id"] not in CALIBRATION]
    random.Random(0).shuffle(shuffled)
    held_out = {r["id"] for r in shuffled[:40]}
    rest = [r for r in rows if r["id"] not in held_out]
    random.Random(1).shuffle(rest)
    return {r["id"] for r in rest[:24]}


def wilson(k: int, n: int) -> list[float | None]:
    if not n:
        return [None, None]
    from scipy.stats import binomtest

    interval = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [float(interval.low), float(interval.high)]


def folds(labels: list[Any], k: int, seed: int) -> list[int]:
    """Fold of each row, stratified by label."""
    fold = [0] * len(labels)
    rng = random.Random(seed)
    for value in sorted(set(map(str, labels))):
        members = [i for i, label in enumerate(labels) if str(label) == value]
        rng.shuffle(members)
        for position, i in enumerate(members):
            fold[i] = position % k
    return fold


def best(candidates: list[Any], score: Any) -> Any:
    """The candidate with the best score; among equals, the middle one (a plateau's centre)."""
    scored = [(score(c), c) for c in candidates]
    top = max(s for s, _ in scored)
    tied = [c for s, c in scored if s == top]
    return tied[len(tied) // 2]


def cross_validate(rows: list[Any], labels: list[bool], candidates: list[Any], decide: Any, k: int, seed: int) -> dict[str, Any]:
    """Out-of-fold accuracy of choosing a candidate setting on k-1 folds, for each held-out fold;
    and the setting fitted on every row."""
    fold = folds(labels, k, seed)
    right = [False] * len(rows)
    said = [None] * len(rows)
    chosen = []
    for f in range(k):
        train = [i for i in range(len(rows)) if fold[i] != f]
        pick = best(candidates, lambda c, train=train: sum(decide(rows[i], c) == labels[i] for i in train))
        chosen.append(pick)
        for i in range(len(rows)):
            if fold[i] == f:
                said[i] = decide(rows[i], pick)
                right[i] = said[i] == labels[i]
    fitted = best(candidates, lambda c: sum(decide(r, c) == y for r, y in zip(rows, labels)))
    n, k_right = len(rows), sum(right)
    return {"n": n, "out_of_fold_accuracy": k_right / n if n else None, "interval": wilson(k_right, n), "chosen_per_fold": chosen,
            "fitted_on_all": fitted, "fitted_accuracy_in_sample": sum(decide(r, fitted) == y for r, y in zip(rows, labels)) / n if n else None,
            "right": right, "said": said}


class Judged:
    """The embedded judge's raw verdicts on rows (scored through the cache), and decisions made
    again from them with other settings."""

    def __init__(self, config_path: str, cached_only: bool = False) -> None:
        from ragjudge.config import load_config
        from ragjudge.scoring import Scorer

        self.scorer = Scorer(load_config(ROOT / config_path))
        self.config = self.scorer.config
        self.cached_only = cached_only

    def score(self, rows: list[dict], metric: str, response: str = "response") -> None:
        """Fill the cache for ``rows`` (the embedded model answers what is not cached; with
        ``cached_only`` nothing is judged, and rows not in the cache count as excluded)."""
        import pandas as pd

        if self.cached_only:
            return
        frame = pd.DataFrame(rows)
        if response != "response":
            frame = frame.drop(columns=["response"]).rename(columns={response: "response"})
        config = self.config.model_copy(update={"metrics": [metric]})
        from ragjudge.scoring import Scorer

        scorer = Scorer(config)
        try:
            scorer.score(frame)
        finally:
            scorer.close()

    def raw(self, rows: list[dict], metric: str, response: str = "response") -> list[tuple[Any, Any, Any]]:
        """(judge, call, raw verdict) per row: the verdict the judge wrote, before any decision
        (None for a row the judge could not answer)."""
        import pandas as pd

        from ragjudge.judges import make_judges
        from ragjudge.types import Verdict

        frame = pd.DataFrame(rows)
        if response != "response":
            frame = frame.drop(columns=["response"]).rename(columns={response: "response"})
        judge = make_judges(self.config.model_copy(update={"metrics": [metric]}))[0]
        mapping = self.scorer.resolve(frame)
        out = []
        for record in self.scorer.records(frame, mapping):
            call = judge.prepare(record)
            if isinstance(call, Verdict):  # answered without a call (an empty retrieval, say)
                out.append((judge, None, call if call.status == "ok" else None))
                continue
            while not call.final:
                first = self.scorer.model.peek(call)
                call = judge.follow_up(call, first) if first is not None and first.status == "ok" else None
                if call is None:
                    break
            found = self.scorer.model.peek(call) if call is not None else None
            out.append((judge, call, found))
        return out

    def decided(self, judged: tuple[Any, Any, Any], **settings: Any) -> Any:
        """The verdict with ``settings`` (the metric's own settings, e.g. ``yes_threshold``) applied by
        the judge's own ``decide``."""
        from ragjudge.judges import judge_class

        judge, call, verdict = judged
        if verdict is None or call is None:
            return verdict
        if not settings:
            return judge.decide(verdict.copy(), call)
        other = judge_class(judge.name)(self.config.judge, judge.threshold, options=judge.options.model_copy(update=settings))
        return other.decide(verdict.copy(), call)


def sufficiency_figures(judged: Judged, data: Path, k: int, seed: int) -> dict[str, Any]:
    rows = {name: [r for r in load(data, name) if r["id"] not in CALIBRATION] for name, _ in SUFFICIENCY}
    raw = {}
    for name, _ in SUFFICIENCY:  # the reference-free slices hold no reference: their rows are judged reference-free
        judged.score(rows[name], "sufficiency")
        raw[name] = judged.raw(rows[name], "sufficiency")
    out: dict[str, Any] = {}
    # reference-free: one yes_threshold for both slices, chosen out of fold on the pooled rows
    pooled = [(name, i) for name, mode in SUFFICIENCY if mode == "reference_free" for i in range(len(rows[name]))]
    usable = [(name, i) for name, i in pooled if raw[name][i][2] is not None and (raw[name][i][2].details or {}).get("p_yes") is not None]
    labels = [bool(rows[name][i]["label_sufficient"]) for name, i in usable]
    cuts = [round(0.30 + 0.01 * c, 2) for c in range(70)]
    items = [raw[name][i] for name, i in usable]
    decide = lambda item, cut: judged.decided(item, yes_threshold=cut).score >= 0.5  # noqa: E731
    written = lambda item: item[2].score >= 0.5  # noqa: E731
    cv = cross_validate(items, labels, cuts, decide, k, seed)
    out["reference_free"] = {"n": len(items), "excluded": len(pooled) - len(usable), "cv": {key: v for key, v in cv.items() if key not in ("right", "said")}}
    for name, mode in SUFFICIENCY:
        if mode != "reference_free":
            continue
        mine = [j for j, (slice_name, _) in enumerate(usable) if slice_name == name]
        right = sum(cv["right"][j] for j in mine)
        written_right = sum(written(items[j]) == labels[j] for j in mine)
        majority = max(sum(labels[j] for j in mine), len(mine) - sum(labels[j] for j in mine))
        out[name] = {"mode": mode, "n": len(mine), "excluded": len(rows[name]) - len(mine),
                     "out_of_fold_accuracy": right / len(mine), "interval": wilson(right, len(mine)),
                     "written_verdict_accuracy": written_right / len(mine), "written_interval": wilson(written_right, len(mine)),
                     "majority_accuracy": majority / len(mine),
                     "judge_yes_rate_out_of_fold": sum(bool(cv["said"][j]) for j in mine) / len(mine),
                     "human_yes_rate": sum(labels[j] for j in mine) / len(mine)}
    # grounded: fact_threshold with fact_evidence, chosen out of fold
    name = SUFFICIENCY[0][0]
    items = [item for item in raw[name] if item[2] is not None]
    labels = [bool(row["label_sufficient"]) for row, item in zip(rows[name], raw[name]) if item[2] is not None]
    grid = [(t, e) for t in [None, *[round(0.30 + 0.05 * c, 2) for c in range(14)]] for e in [None, 0.3, 0.4, 0.5, 0.6, 0.7]]
    decide = lambda item, setting: judged.decided(item, fact_threshold=setting[0], fact_evidence=setting[1]).score >= 0.5  # noqa: E731
    cv = cross_validate(items, labels, grid, decide, k, seed)
    alone = cross_validate(items, labels, [(t, None) for t in [None, *[round(0.30 + 0.05 * c, 2) for c in range(14)]]], decide, k, seed)
    written_right = sum((item[2].score >= 0.5) == y for item, y in zip(items, labels))
    out[name] = {"mode": "grounded", "n": len(items), "excluded": len(rows[name]) - len(items),
                 "cv": {key: v for key, v in cv.items() if key not in ("right", "said")}, "out_of_fold_accuracy": cv["out_of_fold_accuracy"],
                 "interval": cv["interval"], "without_evidence_check": {key: v for key, v in alone.items() if key not in ("right", "said")},
                 "written_verdict_accuracy": written_right / len(items), "written_interval": wilson(written_right, len(items)),
                 "majority_accuracy": max(sum(labels), len(labels) - sum(labels)) / len(labels),
                 "judge_yes_rate_out_of_fold": sum(bool(x) for x in cv["said"]) / len(items), "human_yes_rate": sum(labels) / len(labels)}
    return out


def completeness_figures(judged: Judged, data: Path, k: int, seed: int) -> dict[str, Any]:
    design = design_ids(data)
    rows = [r for r in load(data, "squality_completeness_dev") if r["id"] not in design]
    judged.score(rows, "completeness")
    raw = judged.raw(rows, "completeness")
    scored = [(row, judged.decided(item)) for row, item in zip(rows, raw)]
    ok = [(row, verdict) for row, verdict in scored if verdict is not None and verdict.status == "ok"]
    out: dict[str, Any] = {}
    if len(ok) < 10:  # not judged yet (--cached-only before the rows are scored): no figure
        out["squality"] = {"n": len(ok), "excluded": len(rows) - len(ok), "note": "too few rows judged for a figure"}
    else:
        out["squality"] = _squality(ok, rows, k, seed)
    out["ragchecker_pairs"] = _pairs(judged, data)
    return out


def _squality(ok: list[tuple[dict, Any]], rows: list[dict], k: int, seed: int) -> dict[str, Any]:
    from ragjudge.agreement import numeric_agreement
    from ragjudge.judges.sufficiency import evidence_share

    scores = [verdict.score for _, verdict in ok]
    humans = [float(row["label_completeness"]) for row, _ in ok]
    out: dict[str, Any] = {"squality": {"n": len(ok), "excluded": len(rows) - len(ok), **numeric_agreement(scores, humans)}}
    systems = sorted({row["id"].split("-", 3)[-1] for row, _ in ok})
    out["squality"]["by_system"] = {}
    for system in systems:
        mine = [(s, h) for (row, _), s, h in zip(ok, scores, humans) if row["id"].split("-", 3)[-1] == system]
        out["squality"]["by_system"][system] = {**numeric_agreement([s for s, _ in mine], [h for _, h in mine]),
                                                "judge_mean": statistics.mean(s for s, _ in mine), "human_mean": statistics.mean(h for _, h in mine)}
    # the same rows scored by word overlap alone, no judge: 1 + 4 x the share of the expected
    # response's content words found in the response (like ROUGE-1 recall), as a baseline
    overlap = [1 + 4 * evidence_share(row["expected_response"], [row["response"]]) for row, _ in ok]
    out["squality"]["word_overlap_baseline"] = numeric_agreement(overlap, humans)
    passes = [h >= 3 for h in humans]
    marks = [round(1 + 0.1 * m, 1) for m in range(41)]
    cv = cross_validate(scores, passes, marks, lambda s, m: s >= m, k, seed)
    default_right = sum((s >= 3) == p for s, p in zip(scores, passes))
    out["squality"]["pass_mark"] = {
        "default_3_agreement": default_right / len(ok), "default_3_interval": wilson(default_right, len(ok)),
        "judge_passes_at_3": sum(s >= 3 for s in scores) / len(ok), "people_pass": sum(passes) / len(ok),
        "cv": {key: v for key, v in cv.items() if key not in ("right", "said")},
    }
    return out["squality"]


def _pairs(judged: Judged, data: Path) -> dict[str, Any]:
    """RAGChecker pairs: both responses scored, the sign of the difference against the human
    preference (only pairs with both responses judged count), and the word-overlap baseline."""
    from ragjudge.agreement import pairwise_agreement
    from ragjudge.judges.sufficiency import evidence_share

    out: dict[str, Any] = {}
    pairs = load(data, "ragchecker_pairwise_completeness_dev")
    judged.score(pairs, "completeness")
    judged.score(pairs, "completeness", response="response_b")
    a = [judged.decided(item) for item in judged.raw(pairs, "completeness")]
    b = [judged.decided(item) for item in judged.raw(pairs, "completeness", response="response_b")]
    keep = [i for i in range(len(pairs)) if a[i] is not None and b[i] is not None and a[i].status == b[i].status == "ok"]
    out = {"pairs": len(pairs), "excluded": len(pairs) - len(keep)}
    if len(keep) >= 10:
        out.update(pairwise_agreement([a[i].score for i in keep], [b[i].score for i in keep],
                                      [float(pairs[i]["label_completeness_pref"]) for i in keep]))
    else:
        out["note"] = "too few pairs judged for a figure"
    usable = [i for i in range(len(pairs)) if pairs[i].get("expected_response") and pairs[i].get("response") and pairs[i].get("response_b")]
    out["word_overlap_baseline"] = {"pairs": len(usable), **pairwise_agreement(
        [evidence_share(pairs[i]["expected_response"], [pairs[i]["response"]]) for i in usable],
        [evidence_share(pairs[i]["expected_response"], [pairs[i]["response_b"]]) for i in usable],
        [float(pairs[i]["label_completeness_pref"]) for i in usable])}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--config", default="configs/local.yaml")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["sufficiency", "completeness"])
    parser.add_argument("--cached-only", action="store_true", help="judge nothing: rows not in the cache are excluded (and counted)")
    args = parser.parse_args()
    data = Path(args.data)
    started = time.perf_counter()
    judged = Judged(args.config, args.cached_only)
    results: dict[str, Any] = {"machine": machine(), "config": args.config, "folds": args.folds, "seed": args.seed}
    try:
        if args.only in (None, "sufficiency"):
            results["sufficiency"] = sufficiency_figures(judged, data, args.folds, args.seed)
        if args.only in (None, "completeness"):
            results["completeness"] = completeness_figures(judged, data, args.folds, args.seed)
    finally:
        judged.scorer.close()
    results["seconds"] = time.perf_counter() - started
    out = WORK / "quality"
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(results, indent=2, default=str))
    print(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
