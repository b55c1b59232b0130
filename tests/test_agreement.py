"""ragjudge agreement: statistics against human labels, with hand-computed values (issue 5)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ragjudge.agreement import agreement, binary_agreement, correlation_interval, numeric_agreement, pairwise_agreement


def test_binary_statistics_match_hand_computation():
    result = binary_agreement([1.0, 1.0, 0.0, 0.0, 1.0], [True, False, False, True, True])
    assert result["n"] == 5
    assert result["accuracy"] == pytest.approx(0.6)
    # kappa: p_o = 0.6, p_e = 0.6*0.6 + 0.4*0.4 = 0.52 -> (0.6 - 0.52) / 0.48
    assert result["cohen_kappa"] == pytest.approx(1 / 6)
    assert result["accuracy_ci95"] == pytest.approx([0.2307, 0.8824], abs=1e-4)  # Wilson, 3 of 5
    assert result["per_class"]["yes"] == {"precision": pytest.approx(2 / 3), "recall": pytest.approx(2 / 3), "f1": pytest.approx(2 / 3), "support": 3}
    assert result["per_class"]["no"]["recall"] == pytest.approx(0.5)
    assert result["confusion"] == {"human_yes": {"judge_yes": 2, "judge_no": 1}, "human_no": {"judge_yes": 1, "judge_no": 1}}


def test_numeric_statistics():
    result = numeric_agreement([1, 2, 3, 4, 5], [1, 2, 3, 5, 4])
    assert result["spearman"] == pytest.approx(0.9)
    assert result["pearson"] == pytest.approx(0.9)
    assert result["mae"] == pytest.approx(0.4)
    assert result["within_one"] == 1.0


def test_correlations_carry_95_percent_intervals_by_fishers_z():
    from scipy.stats import pearsonr

    result = numeric_agreement([1, 2, 3, 4, 5], [1, 2, 3, 5, 4])
    # Pearson: the interval scipy itself gives (Fisher's z, standard error 1 / sqrt(n - 3))
    expected = pearsonr([1, 2, 3, 4, 5], [1, 2, 3, 5, 4]).confidence_interval(0.95)
    assert result["pearson_ci95"] == pytest.approx([expected.low, expected.high], abs=1e-5)
    # Spearman: standard error sqrt(1.06 / (n - 3)) (Fieller, Hartley and Pearson): tanh(atanh(0.9) -+ 1.96 sqrt(0.53))
    assert result["spearman_ci95"] == pytest.approx([0.04531, 0.99395], abs=1e-4)
    assert correlation_interval(0.58, 93) == pytest.approx([0.4217, 0.7040], abs=1e-4)
    assert correlation_interval(0.5, 4) is None  # too few pairs
    assert correlation_interval(1.0, 10) == [1.0, 1.0]


def test_pairwise_sign_agreement_reports_ties_apart():
    result = pairwise_agreement([1, 3, 2, 4, 2], [2, 3, 1, 5, 4], [1, 1, -1, 0, -2])
    assert result == {"n": 5, "decided": 3, "sign_agreement": pytest.approx(2 / 3), "judge_ties": 1, "human_ties": 1}


def test_only_ok_rows_with_labels_are_compared():
    table = pd.DataFrame({
        "sufficiency_status": ["ok", "ok", "error", "skipped", "ok"],
        "sufficiency_score": [1.0, 0.0, None, None, 1.0],
        "label": [True, False, True, False, None],
    })
    report = agreement(table, "sufficiency", "label")
    assert report["excluded"] == {"error": 1, "skipped": 1, "no_label": 1}
    assert report["overall"]["n"] == 2 and report["overall"]["accuracy"] == 1.0


def test_by_column_breakdown():
    table = pd.DataFrame({
        "completeness_status": ["ok"] * 6,
        "completeness_score": [1, 2, 3, 5, 4, 3],
        "label": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
        "system": ["a", "a", "a", "b", "b", "b"],
    })
    report = agreement(table, "completeness", "label", by="system")
    assert report["by"]["a"]["spearman"] == pytest.approx(1.0)
    assert report["by"]["b"]["spearman"] == pytest.approx(-1.0)


def test_cli_agreement_json_and_missing_label_column(run_cli, tmp_path):
    path = tmp_path / "scored.jsonl"
    rows = [{"sufficiency_status": "ok", "sufficiency_score": s, "label": l} for s, l in [(1.0, True), (0.0, False), (1.0, False)]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_cli(["agreement", str(path), "-m", "sufficiency", "--labels", "label", "--json"], judge=False)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["overall"]["accuracy"] == pytest.approx(2 / 3)
    # score's form, METRIC=COLUMN (a new user's find: it was read as a column named 'sufficiency=label')
    named = run_cli(["agreement", str(path), "-m", "sufficiency", "--labels", "sufficiency=label", "--json"], judge=False)
    assert named.code == 0 and json.loads(named.stdout) == json.loads(result.stdout)
    text = run_cli(["agreement", str(path), "-m", "sufficiency", "--labels", "label"], judge=False)
    assert "accuracy 0.667" in text.stdout
    missing = run_cli(["agreement", str(path), "-m", "sufficiency", "--labels", "human"], judge=False)
    assert missing.code == 2
    assert "column 'human' (the human labels; set --labels) not found" in missing.stderr


def test_cli_pairwise(run_cli, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"completeness_status": "ok", "completeness_score": s, "pref": p}) + "\n" for s, p in [(2, 1), (4, -1), (3, 2)]))
    b.write_text("".join(json.dumps({"completeness_status": "ok", "completeness_score": s, "pref": p}) + "\n" for s, p in [(3, 1), (2, -1), (1, 2)]))
    result = run_cli(["agreement", str(a), "-m", "completeness", "--labels", "pref", "--pair", str(b), "--json"], judge=False)
    assert json.loads(result.stdout)["pairwise"]["sign_agreement"] == pytest.approx(2 / 3)


def test_non_finite_and_boolean_ratings_are_not_labels():
    # inf gave "mae inf, pearson nan" and invalid JSON; true was read as the rating 1.0
    table = pd.DataFrame({"completeness_status": ["ok"] * 5, "completeness_score": [1.0, 2.0, 3.0, 4.0, 5.0],
                          "rating": [1, 2, float("inf"), True, 5]})
    report = agreement(table, "completeness", "rating")
    assert report["excluded"] == {"error": 0, "skipped": 0, "no_label": 2}
    assert report["overall"]["n"] == 3 and report["overall"]["mae"] == 0.0
    json.dumps(report, allow_nan=False)  # valid JSON


def test_a_labels_column_without_one_usable_label_is_an_error():
    from ragjudge.errors import InputError

    table = pd.DataFrame({"sufficiency_status": ["ok", "ok"], "sufficiency_score": [1.0, 0.0], "source": ["wiki", "news"]})
    with pytest.raises(InputError, match="column 'source' holds no usable label in 2 rows \\(expected yes/no, true/false or 1/0\\)"):
        agreement(table, "sufficiency", "source")


def test_pair_table_is_matched_by_id_and_each_excluded_row_counts_once():
    a = pd.DataFrame({"id": ["x", "y", "z", "w"], "completeness_status": ["ok", "ok", "skipped", "ok"],
                      "completeness_score": [2.0, 4.0, None, 3.0], "pref": [1, -1, 1, 1]})
    b = pd.DataFrame({"id": ["w", "z", "y", "x"], "completeness_status": ["ok", "skipped", "ok", "ok"],
                      "completeness_score": [4.0, None, 5.0, 3.0], "pref": [1, 1, -1, 1]})
    report = agreement(a, "completeness", "pref", pair=b)
    # x: 2 -> 3 (B better, human B) agree; y: 4 -> 5 but human says A: disagree; w: 3 -> 4 agree
    assert report["pairwise"] == {"n": 3, "decided": 3, "sign_agreement": pytest.approx(2 / 3), "judge_ties": 0, "human_ties": 0}
    assert report["excluded"] == {"error": 0, "skipped": 1, "no_label": 0}
    from ragjudge.errors import InputError

    with pytest.raises(InputError, match="id 'w' is not in the pair table"):
        agreement(a, "completeness", "pref", pair=b.assign(id=["v", "z", "y", "x"]))
    assert report["matched_by"] == "id"
    numbered = agreement(a.assign(id=[1, 2, 3, 4]), "completeness", "pref", pair=b.assign(id=[4.0, 3.0, 2.0, 1.0]))
    assert numbered["pairwise"] == report["pairwise"]  # ids 1 and 1.0 are the same row
    from ragjudge.agreement import render

    by_position = agreement(a.drop(columns="id"), "completeness", "pref", pair=b)
    assert by_position["matched_by"] == "position" and "rows matched by position" in render(by_position)
    with pytest.raises(InputError, match="in the --pair table too"):
        agreement(a, "completeness", "pref", pair=b.drop(columns="pref"))


def test_list_labels_are_not_ratings():
    import numpy as np

    table = pd.DataFrame({"completeness_status": ["ok"] * 3, "completeness_score": [1.0, 2.0, 3.0],
                          "rating": [np.array([1, 2]), np.array([3]), 3]})
    report = agreement(table, "completeness", "rating")
    assert report["excluded"]["no_label"] == 2 and report["overall"]["n"] == 1
