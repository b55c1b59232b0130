"""Verdict probabilities in the summary (issue 61 item 4): per metric the mean probability and,
with labels, the calibration curve (10 equal-width bins: mean P against the share labelled yes,
with counts and Wilson intervals) and the Brier score, in the summary JSON, the console and
Markdown line, the HTML report's lines and its histogram of P(yes) by verdict; the table read
back (ragjudge report) counts the same."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from markupsafe import escape

from conftest import write_jsonl
from ragjudge.corrected_rates import ProbabilityStats

YES = {"request": "Where is the tower?", "context": ["The tower is in Paris."]}
NO = {"request": "How far is the moon?", "context": ["The tower is in Paris."]}


def test_the_curve_and_brier_score_are_scikit_learns():
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss

    rng = random.Random(3)
    p = [rng.random() for _ in range(400)] + [1.0, 0.0]
    y = [float(rng.random() < q) for q in p]
    first, second = ProbabilityStats(), ProbabilityStats()
    for i, (q, label) in enumerate(zip(p, y)):
        half = first if i % 2 else second
        half.add(q)
        half.add_label(q, label)
    stats = first.merge(second)  # chunks add up
    observed, predicted = calibration_curve(y, p, n_bins=10, strategy="uniform")
    curve = stats.curve()
    assert [b["observed"] for b in curve] == pytest.approx(list(observed))
    assert [b["mean_probability"] for b in curve] == pytest.approx(list(predicted))
    assert sum(b["rows"] for b in curve) == 402 and curve[-1]["high"] == 1.0
    assert stats.to_dict()["brier"] == pytest.approx(brier_score_loss(y, p))
    assert stats.mean == pytest.approx(float(np.mean(p)))
    low, high = curve[0]["interval"]
    assert low <= curve[0]["observed"] <= high


def test_a_bin_interval_is_wilsons():
    stats = ProbabilityStats()
    for label in [1.0] * 7 + [0.0] * 3:
        stats.add(0.75)
        stats.add_label(0.75, label)
    (only,) = stats.curve()
    assert (only["low"], only["high"], only["rows"], only["observed"]) == (0.7, 0.8, 10, 0.7)
    assert only["interval"] == pytest.approx([0.3968, 0.8922], abs=1e-4)  # Wilson 95% of 7 of 10


def test_every_output_gives_the_mean_probability_and_with_labels_the_curve(run_score, judge, tmp_path):
    judge.p_yes = 0.8
    rows = [{**(YES if i % 4 else NO), "id": f"r{i}", **({"human": "no" if i % 5 == 0 else "yes"} if i < 20 else {})} for i in range(40)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    config = tmp_path / "c.yaml"
    config.write_text("sufficiency:\n  yes_threshold: 0.5\n")
    files = {name: tmp_path / name for name in ("s.json", "s.md", "r.html", "out.parquet")}
    run = run_score(source, metric=["sufficiency"], labels=["sufficiency=human"], min_pass_rate=["0"], config=str(config),
                    summary_json=str(files["s.json"]), markdown=str(files["s.md"]), html=str(files["r.html"]), output=str(files["out.parquet"]))
    assert run.code == 0, run.error
    document = json.loads(files["s.json"].read_text())["metrics"]["sufficiency"]["probability"]
    assert (document["rows"], document["mean"], document["labelled"]) == (40, pytest.approx(0.8), 20)
    assert document["brier"] == pytest.approx((16 * 0.2 ** 2 + 4 * 0.8 ** 2) / 20)  # 4 of the 20 labels are no
    (only,) = document["curve"]
    assert (only["low"], only["high"], only["rows"], only["observed"]) == (0.8, pytest.approx(0.9), 20, 0.8)
    line = ("sufficiency: mean P(yes) 0.80 over 40 ok rows; against 'human' (20 labelled): Brier 0.160, "
            "0.8-0.9: P 0.80, observed 0.80 of 20")
    assert line in files["s.md"].read_text() and str(escape(line)) in files["r.html"].read_text()  # as Jinja escapes it
    assert "sufficiency: P(yes) by verdict" in files["r.html"].read_text()  # the histogram's title, in its SVG
    import pandas as pd

    from ragjudge.counting import summarize
    from ragjudge.settings import load_config

    again = summarize(pd.read_parquet(files["out.parquet"]), load_config(None, {"labels": {"sufficiency": "human"}}), ["sufficiency"])
    assert again.metrics["sufficiency"].probability.to_dict() == document


def test_without_probabilities_the_summary_has_no_probability_block(run_score, tmp_path):
    summary = tmp_path / "s.json"
    run = run_score(write_jsonl(tmp_path / "in.jsonl", [YES]), metric=["sufficiency"], min_pass_rate=["0"], summary_json=str(summary))
    assert run.code == 0, run.error
    assert "probability" not in json.loads(summary.read_text())["metrics"]["sufficiency"]
