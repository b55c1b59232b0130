"""Judge quality: the embedded judge's agreement with human labels on the development slices.

For each slice in the shared data folder (``--data``, default ../shared/data), takes a
fixed random subset of ``--rows`` rows (seed 0; label-balanced for the binary slices),
scores it with configs/local.yaml, and runs ``ragjudge agreement``. RAGChecker pairs are
scored twice (response, then response_b) and compared pairwise. The SQuALITY slice takes
``--completeness-rows`` rows (default ``--rows``), never the 24 on which
bench/completeness_variants.py chose the judge's design. For both completeness slices the
same rows are also scored by word overlap alone (``word_recall_baseline``), to show what the
judge adds. Prints one line per slice and writes bench/_work/agreement/summary.json;
README's judge-quality table is made from it.

    python bench/agreement.py [--rows 30] [--completeness-rows N] [--data ../shared/data] [--config configs/local.yaml]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

from _common import ROOT, WORK, machine

SLICES = [  # file, metric, label column, mode, by
    ("squad2_goldremoved_sufficiency_dev", "sufficiency", "label_sufficient", "grounded", None),
    ("clapnq_sufficiency_dev", "sufficiency", "label_sufficient", "reference-free", None),
    ("squad2_unanswerable_sufficiency_dev", "sufficiency", "label_sufficient", "reference-free", None),
    ("squality_completeness_dev", "completeness", "label_completeness", "1..5", "system"),
    ("ragchecker_pairwise_completeness_dev", "completeness", "label_completeness_pref", "pairwise", None),
]


CALIBRATION = {line.strip() for line in open(Path(__file__).with_name("calibration_ids.txt"), encoding="utf-8") if line.strip() and not line.startswith("#")}


def subset(path: Path, rows: int, label: str, binary: bool, exclude: frozenset[str] = frozenset()) -> list[dict]:
    """A fixed sample of the slice, leaving out the rows used to tune prompts and thresholds
    (and, for a 1..5 slice, the ids in ``exclude``, taken out after the shuffle so that a
    larger sample starts with the same rows as a smaller one)."""
    data = [r for r in (json.loads(line) for line in open(path, encoding="utf-8")) if r["id"] not in CALIBRATION]
    rng = random.Random(0)
    rng.shuffle(data)
    if not binary:
        return [r for r in data if r["id"] not in exclude][:rows]
    yes = [r for r in data if r[label] is True][: rows // 2]
    no = [r for r in data if r[label] is False][: rows - rows // 2]
    mixed = yes + no
    rng.shuffle(mixed)
    return mixed


def design_rows(path: Path, count: int = 24) -> list[dict]:
    """The SQuALITY rows on which bench/completeness_variants.py chose the two-call design:
    ``count`` rows outside the first 40 of ``subset`` (seed 1). Never among the rows this
    script reports."""
    held_out = {r["id"] for r in subset(path, 40, "label_completeness", False)}
    rows = [r for r in (json.loads(line) for line in open(path, encoding="utf-8")) if r["id"] not in held_out]
    random.Random(1).shuffle(rows)
    return rows[:count]


def word_recall_baseline(scored: Path, target: Path, response: str = "response") -> None:
    """Copy of the scored table whose completeness_score is ``1 + 4 x`` the share of the
    expected response's content words found in the response (``evidence_share``: a
    ROUGE-1-recall-like figure, no judge), so that ``ragjudge agreement`` reads it like the judge."""
    sys.path.insert(0, str(ROOT))
    from ragjudge.judges.sufficiency import evidence_share

    rows = [json.loads(line) for line in open(scored, encoding="utf-8")]
    for row in rows:
        ok = bool(row.get("expected_response") and row.get(response))
        row["completeness_score"] = 1 + 4 * evidence_share(row["expected_response"], [row[response]]) if ok else None
        row["completeness_status"] = "ok" if ok else "skipped"
    target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def load_yaml(path: str) -> dict:
    import yaml

    return yaml.safe_load(open(ROOT / path, encoding="utf-8")) or {}


def evidence_check_figures(config: str, source: Path, scored: Path, label: str, stem: Path) -> dict:
    """The grounded slice again without ``sufficiency.fact_evidence`` (from the cache: the check runs
    after the judge call), and the check alone (every fact's evidence share >= the config's
    ``fact_evidence``, no judge)."""
    import yaml

    sys.path.insert(0, str(ROOT))
    from ragjudge.judges.sufficiency import evidence_share

    settings = load_yaml(config)
    share_cut = (settings.get("sufficiency") or {}).get("fact_evidence")
    if share_cut is None:
        return {}
    settings["sufficiency"]["fact_evidence"] = None
    plain = stem.with_name(stem.name + ".no_evidence.yaml")
    plain.write_text(yaml.safe_dump(settings), encoding="utf-8")
    rescored = stem.with_name(stem.name + ".no_evidence.scored.jsonl")
    ragjudge("score", str(source), "-o", str(rescored), "-c", str(plain), "-m", "sufficiency", "--min-pass-rate", "0", "--max-error-rate", "1", "-q")
    without = json.loads(ragjudge("agreement", str(rescored), "-m", "sufficiency", "--labels", label, "--json").stdout)
    print("  same rows without the evidence check: " + summary_line(without))
    rows = [json.loads(line) for line in open(scored, encoding="utf-8")]
    right = 0
    for row in rows:
        facts = row.get("expected_facts") or [row.get("expected_response") or ""]
        passages = [c if isinstance(c, str) else c.get("content", "") for c in row.get("context") or []]
        right += (min(evidence_share(f, passages) for f in facts) >= share_cut) == bool(row[label])
    alone = right / len(rows) if rows else None
    print(f"  the evidence check alone (fact_evidence {share_cut}, no judge): accuracy {fmt(alone)} on {len(rows)} rows")
    return {"without_evidence_check": without, "evidence_check_alone_accuracy": alone}


def system_figures(scored: Path, label: str, threshold: float) -> dict:
    """Per system (the id's last part): mean judge score and mean human rating; overall, how
    often pass/fail at ``threshold`` agrees with "human rating >= threshold"."""
    rows = [r for r in (json.loads(line) for line in open(scored, encoding="utf-8")) if r.get("completeness_status") == "ok"]
    figures: dict = {}
    for system in sorted({r["id"].split("-", 3)[-1] for r in rows}):
        mine = [r for r in rows if r["id"].split("-", 3)[-1] == system]
        figures[system] = (f"judge mean {sum(r['completeness_score'] for r in mine) / len(mine):.2f}, "
                           f"human mean {sum(r[label] for r in mine) / len(mine):.2f} (n {len(mine)})")
    if rows:
        agree = sum((r["completeness_score"] >= threshold) == (r[label] >= threshold) for r in rows) / len(rows)
        figures["pass/fail"] = (f"agrees with human >= {threshold:g} on {agree:.2f}; judge passes "
                                f"{sum(r['completeness_score'] >= threshold for r in rows) / len(rows):.2f}, "
                                f"people {sum(r[label] >= threshold for r in rows) / len(rows):.2f}")
    return figures


def ragjudge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragjudge", *args], cwd=ROOT, capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30)
    parser.add_argument("--completeness-rows", type=int, help="rows of the SQuALITY slice (default: --rows; at most 126, "
                        "the rows outside the completeness design rows)")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--config", default="configs/local.yaml")
    parser.add_argument("--only", nargs="*", help="slice names to run (default: all)")
    args = parser.parse_args()
    out = WORK / "agreement"
    out.mkdir(parents=True, exist_ok=True)
    if not Path(args.data).is_dir():
        parser.error(f"--data {args.data}: no such folder (the development slices live in ../shared/data beside the checkout)")
    unknown = sorted(set(args.only or []) - {name for name, *_ in SLICES})
    if unknown:
        parser.error(f"--only: unknown slice(s) {', '.join(unknown)}; known: {', '.join(name for name, *_ in SLICES)}")
    print(f"machine: {machine()}; judge config {args.config}; {args.rows} rows per slice")
    results = {}
    for name, metric, label, mode, by in SLICES:
        if args.only and name not in args.only:
            continue
        path = Path(args.data) / f"{name}.jsonl"
        if mode == "1..5":
            design = frozenset(r["id"] for r in design_rows(path))
            rows = subset(path, args.completeness_rows or args.rows, label, False, exclude=design)
        else:
            rows = subset(path, args.rows, label, metric == "sufficiency")
        source = out / f"{name}.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
        scored = out / f"{name}.scored.jsonl"
        common = ["-c", args.config, "-m", metric, "--min-pass-rate", "0", "--max-error-rate", "1", "-q"]
        done = ragjudge("score", str(source), "-o", str(scored), *common)
        if done.returncode not in (0, 1):
            print(f"{name}: scoring failed (exit {done.returncode}): {done.stderr.strip()}")
            continue
        extra = ["--by", by] if by else []
        if mode == "pairwise":
            scored_b = out / f"{name}.scored_b.jsonl"
            ragjudge("score", str(source), "-o", str(scored_b), "--map", "response=response_b", *common)
            extra = ["--pair", str(scored_b)]
        report = json.loads(ragjudge("agreement", str(scored), "-m", metric, "--labels", label, "--json", *extra).stdout)
        results[name] = {"mode": mode, "metric": metric, "rows": len(rows), "report": report}
        print(f"{name} ({mode}): " + summary_line(report))
        if mode == "grounded":  # what the evidence check does: the judge without it, and it alone
            results[name].update(evidence_check_figures(args.config, source, scored, label, out / name))
        if mode == "1..5":
            results[name]["by_system"] = system_figures(scored, label, float(load_yaml(args.config).get("thresholds", {}).get("completeness", 3)))
            print("  " + "; ".join(f"{k}: {v}" for k, v in results[name]["by_system"].items()))
        if metric == "completeness":  # the same rows scored by word overlap alone, for scale
            word_recall_baseline(scored, out / f"{name}.baseline.jsonl")
            if mode == "pairwise":
                word_recall_baseline(scored_b, out / f"{name}.baseline_b.jsonl", "response_b")
                extra = ["--pair", str(out / f"{name}.baseline_b.jsonl")]
            baseline = json.loads(ragjudge("agreement", str(out / f"{name}.baseline.jsonl"), "-m", metric, "--labels", label, "--json", *extra).stdout)
            results[name]["word_recall_baseline"] = baseline
            print("  word-recall baseline, same rows: " + summary_line(baseline))
    (out / "summary.json").write_text(json.dumps(results, indent=2))


def summary_line(report: dict) -> str:
    if "pairwise" in report:
        p = report["pairwise"]
        return f"pairs {p['n']}, decided {p['decided']}, sign agreement {fmt(p['sign_agreement'])}, judge ties {p['judge_ties']}"
    m = report["overall"]
    if "accuracy" in m:
        ci = m.get("accuracy_ci95") or [None, None]
        return f"n {m['n']}, accuracy {fmt(m['accuracy'])} [{fmt(ci[0])}, {fmt(ci[1])}], kappa {fmt(m.get('cohen_kappa'))}, judge yes rate {fmt(m.get('judge_yes_rate'))}, excluded {report['excluded']}"
    by = "; ".join(f"{k}: {fmt(v.get('spearman'))} (n {v['n']})" for k, v in report.get("by", {}).items())
    return f"n {m['n']}, spearman {fmt(m.get('spearman'))}, pearson {fmt(m.get('pearson'))}, mae {fmt(m.get('mae'))}; by system: {by}"


def fmt(value) -> str:
    return "-" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
