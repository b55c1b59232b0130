"""Pairwise judging against people: the embedded judge's pairwise verdicts (``--pairwise
response,response_b``) on the bundled RAGChecker pairs, both orders and one order, against the two
annotators' completeness preference (issue 64 item 4; docs/quality.md).

The rows: ../shared/data/ragchecker_pairwise_completeness_dev.jsonl (140 pairs; RAGChecker's
meta-evaluation, Apache-2.0): two responses to one request, with the reference answer, and
``label_completeness_pref``, the mean of two annotators' preference -2..2 (positive: response B
more complete). The human verdict is its sign (0: a tie). The judge is asked each pair in both
orders (``ragjudge score ... --pairwise response,response_b -c local``); its verdict counts only
when both orders agree, else a tie marked inconsistent. "One order" reads each order's verdict
alone (``pairwise_order_ab``: A shown first, as a judge asked once without flipping would;
``pairwise_order_ba``: B shown first).

Figures, each with its n and Wilson 95% interval (``ragjudge.calibrate.wilson``):
- **decided agreement**: on the pairs people did not call a tie, the share whose judge verdict
  names the same response (a judge tie counts as a disagreement), and the share among the pairs
  both decided (the per-response completeness figure's denominator in docs/quality.md);
- **three-way agreement**: over every pair judged, A / tie / B equal to the human sign;
- **position inconsistency**: the share of pairs whose two orders disagreed, and which position
  the disagreeing verdicts favoured.

    python bench/pairwise.py [--limit N] [--data ../shared/data] [--config local] [--set KEY=VALUE] [--tag NAME]

The first run judges 2 calls a pair with the embedded model (minutes per ten pairs on 2 cores);
every reply is cached (bench/_work/pairwise/cache), so a second run takes seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, WORK, machine

NAME = "ragchecker_pairwise_completeness_dev"


def wilson(k: int, n: int) -> list[float] | None:
    from ragjudge.calibrate import wilson as interval

    return list(interval(k, n)) if n else None


def share(k: int, n: int) -> dict:
    return {"k": k, "n": n, "share": k / n if n else None, "interval": wilson(k, n)}


def sign(value: float) -> str:
    return "b" if value > 0 else "a" if value < 0 else "tie"


def figures(rows: list[dict], column: str) -> dict:
    """Agreement of ``column`` (a / b / tie per row, None: not judged) with the human sign."""
    judged = [r for r in rows if r.get(column) in ("a", "b", "tie")]
    decided = [r for r in judged if r["human"] != "tie"]
    both = [r for r in decided if r[column] != "tie"]
    return {"judged": len(judged),
            "decided_agreement": share(sum(r[column] == r["human"] for r in decided), len(decided)),
            "both_decided_agreement": share(sum(r[column] == r["human"] for r in both), len(both)),
            "three_way_agreement": share(sum(r[column] == r["human"] for r in judged), len(judged)),
            "judge_ties": sum(r[column] == "tie" for r in judged)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--limit", type=int, default=None, help="judge the first N pairs only")
    parser.add_argument("--config", default="local", help="the judge's config (default: the embedded judge's, -c local)")
    parser.add_argument("--set", dest="sets", action="append", default=[], help="a setting of the run (--set KEY=VALUE, repeat), e.g. "
                                                                                "pairwise.reason_first=true")
    parser.add_argument("--tag", default="", help="a name for this variant's outputs (scored_TAG.jsonl, figures_TAG.json)")
    args = parser.parse_args()
    source = Path(args.data) / f"{NAME}.jsonl"
    work = WORK / "pairwise"
    work.mkdir(parents=True, exist_ok=True)
    tag = f"_{args.tag}" if args.tag else ""
    scored, summary = work / f"scored{tag}.jsonl", work / f"summary{tag}.json"
    command = [sys.executable, "-m", "ragjudge", "score", str(source), "--pairwise", "response,response_b", "-c", args.config,
               "--cache-dir", str(work / "cache"), "-o", str(scored), "--summary-json", str(summary), "-q",
               "--max-error-rate", "1", "--max-skip-rate", "1"]
    if args.limit:
        command += ["--limit", str(args.limit)]
    for item in args.sets:
        command += ["--set", item]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1):
        sys.exit(f"ragjudge score failed ({done.returncode}):\n{done.stderr[-3000:]}")
    rows = []
    with open(scored, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row.get("pairwise_status") is None:
                continue
            row["human"] = sign(float(row["label_completeness_pref"]))
            rows.append(row)
    ok = [r for r in rows if r["pairwise_status"] == "ok"]
    asked = [r for r in ok if r.get("pairwise_order_ab") and r.get("pairwise_order_ba")]
    flipped = [r for r in asked if r["pairwise_inconsistent"]]
    out = {
        "machine": machine(), "seconds": round(seconds, 1), "rows": len(rows),
        "status": {s: sum(r["pairwise_status"] == s for r in rows) for s in ("ok", "error", "skipped")},
        "human": {h: sum(r["human"] == h for r in ok) for h in ("a", "tie", "b")},
        "both_orders": figures(ok, "pairwise_verdict"),
        "order_ab_alone": figures(ok, "pairwise_order_ab"),
        "order_ba_alone": figures(ok, "pairwise_order_ba"),
        "inconsistency": {**share(len(flipped), len(asked)),
                          "favoured_first_shown": sum(r["pairwise_order_ab"] == "a" and r["pairwise_order_ba"] == "b" for r in flipped),
                          "favoured_second_shown": sum(r["pairwise_order_ab"] == "b" and r["pairwise_order_ba"] == "a" for r in flipped),
                          "a_tie_in_one_order": sum("tie" in (r["pairwise_order_ab"], r["pairwise_order_ba"]) for r in flipped)},
        "settings": args.sets, "limit": args.limit,
        "summary": json.loads(summary.read_text())["metrics"]["pairwise"].get("pairwise"),
    }
    (work / f"figures{tag}.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")

    def show(name: str, f: dict) -> str:
        d, b, t = f["decided_agreement"], f["both_decided_agreement"], f["three_way_agreement"]

        def fmt(x: dict) -> str:
            return "n/a" if x["share"] is None else f"{x['share']:.2f} [{x['interval'][0]:.2f}, {x['interval'][1]:.2f}] ({x['k']} of {x['n']})"
        return (f"| {name} | {fmt(d)} | {fmt(b)} | {fmt(t)} | {f['judge_ties']} |")

    print(f"machine: {out['machine']}; {len(rows)} pairs in {seconds:.0f} s; status {out['status']}; human sign on ok pairs {out['human']}")
    print("| verdict | agreement on the pairs people decided (a judge tie: wrong) | on the pairs both decided | three-way (A / tie / B) | judge ties |")
    print("|---|---|---|---|---|")
    print(show("both orders (ragjudge's verdict)", out["both_orders"]))
    print(show("one order: A shown first", out["order_ab_alone"]))
    print(show("one order: B shown first", out["order_ba_alone"]))
    inc = out["inconsistency"]
    if inc["n"]:
        print(f"position inconsistency: {inc['share']:.2f} [{inc['interval'][0]:.2f}, {inc['interval'][1]:.2f}] ({inc['k']} of {inc['n']} pairs): "
              f"first shown favoured {inc['favoured_first_shown']}, second shown {inc['favoured_second_shown']}, a tie in one order {inc['a_tie_in_one_order']}")
    print(f"figures: {work / f'figures{tag}.json'}")


if __name__ == "__main__":
    main()
