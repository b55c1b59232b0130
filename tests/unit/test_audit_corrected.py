"""The abstention audit's label-corrected rates (``ragjudge.audit.Audit.corrected``,
``ragjudge.corrected_rates.ratio_corrected``): PPI++ means of a rate's count and rows over the
same rows, their ratio, a seeded stratified bootstrap interval; in the summary, the console lines
and the ``max_rate`` gate under ``gate_on: corrected``. The PPI++ means are checked against the
formulas of ``corrected_rates``' docstring computed here with numpy (ppi_py is not installed)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import read_jsonl, write_jsonl
from helpers import audit_rows as build
from ragjudge.audit import Audit, lines
from ragjudge.corrected_rates import MIN_LABELS, ppi_binary_mean, ratio_corrected
from ragjudge.gate import Kind, audit_checks
from ragjudge.reports.gate_text import line

METRICS = ["sufficiency", "completeness", "abstention"]


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> float:
    """PPI++'s mean, from the docstring's formulas (tuned lam clipped to 0..1), row by row."""
    n, big_n = len(y), len(yhat_u)
    lam = np.cov(y, yhat, ddof=0)[0, 1] / ((1 + n / big_n) * np.var(np.concatenate([yhat, yhat_u]), ddof=1))
    lam = min(max(lam, 0.0), 1.0)
    return float(lam * yhat_u.mean() + (y - lam * yhat).mean())


def sample(seed: int = 3, n: int = 60, big_n: int = 240):
    """Rows of 0/1 (counted, on the side), label and judge; the judge wrong on about 15% of the rows."""
    rng = np.random.default_rng(seed)
    side = rng.random(n + big_n) < 0.5
    counted = side & (rng.random(n + big_n) < 0.4)
    truth = np.c_[counted, side].astype(float)
    judged = truth.copy()
    wrong = rng.random(n + big_n) < 0.15
    judged[wrong, 0] = judged[wrong, 1] * (1 - judged[wrong, 0])  # a counted row judged not counted, and back
    return truth[:n], judged[:n], judged[n:]


def test_the_ppi_mean_of_sums_equals_the_docstring_formula_row_by_row():
    y, h, u = sample()
    for k in (0, 1):
        a, b, c = y[:, k], h[:, k], u[:, k]
        assert ppi_binary_mean(len(a), a.sum(), b.sum(), (a * b).sum(), len(c), c.sum()) == pytest.approx(ppi_mean(a, b, c), abs=1e-12)


def test_the_corrected_ratio_is_the_ratio_of_the_two_ppi_means_with_an_interval_around_it():
    y, h, u = sample()
    found = ratio_corrected(np.c_[y, h], u)
    expected = ppi_mean(y[:, 0], h[:, 0], u[:, 0]) / ppi_mean(y[:, 1], h[:, 1], u[:, 1])
    assert found.estimate == pytest.approx(expected, abs=1e-12)
    assert (found.labelled, found.unlabelled) == (60, 240)
    assert found.low < found.estimate < found.high
    assert ratio_corrected(np.c_[y, h], u) == found  # seeded: the same rows, the same interval


def test_the_bootstrap_interval_is_that_of_resampling_labelled_and_unlabelled_rows_apart():
    y, h, u = sample()
    found = ratio_corrected(np.c_[y, h], u)
    rng = np.random.default_rng(11)
    ratios = []
    for _ in range(2000):  # a stratified resample of rows, by index
        i, j = rng.integers(0, len(y), len(y)), rng.integers(0, len(u), len(u))
        bottom = ppi_mean(y[i, 1], h[i, 1], u[j, 1])
        if bottom > 0:
            ratios.append(ppi_mean(y[i, 0], h[i, 0], u[j, 0]) / bottom)
    low, high = np.percentile(ratios, [2.5, 97.5])
    assert found.low == pytest.approx(low, abs=0.03) and found.high == pytest.approx(high, abs=0.03)


def test_every_row_labelled_and_the_judge_equal_to_the_labels_gives_the_plain_rate():
    cells = ["insufficient_correct"] * 7 + ["insufficient_abstained"] * 13 + ["sufficient_correct"] * 16 + ["sufficient_abstained"] * 4
    audit = Audit()
    audit.add(cells)
    audit.add_pairs(cells, cells)
    for name, (count, rows) in (("answered_insufficient", (7, 20)), ("abstained_sufficient", (4, 20))):
        assert audit.rate(name) == (count, rows)
        assert audit.corrected(name).estimate == count / rows
        assert audit.corrected(name).labelled == 40


def test_below_min_labels_no_interval_and_how_many_more():
    y, h, u = sample(n=MIN_LABELS - 4)
    found = ratio_corrected(np.c_[y, h], u)
    assert (found.estimate, found.low, found.needed) == (None, None, 4)


def test_no_labels_no_corrected_rate_and_the_summary_keeps_its_keys():
    audit = Audit()
    audit.add(["sufficient_correct"])
    assert audit.corrected("answered_insufficient") is None
    assert "corrected" not in audit.to_dict()["rates"]["answered_insufficient"]


def audit_of(judged: list[str], labelled: list[str | None], bound: float, few_labels: str = "fail") -> Audit:
    audit = Audit(max_rate={"answered_insufficient": bound}, gate_on={"answered_insufficient": "corrected"}, few_labels=few_labels)
    audit.add([lab if lab is not None else j for j, lab in zip(judged, labelled)])
    audit.add_pairs(judged, labelled)
    return audit


def gate(audit: Audit):
    [check] = audit_checks(SimpleNamespace(audit=audit, metrics=dict.fromkeys(METRICS)))
    return check, line(check)


def test_the_corrected_gate_fails_when_the_upper_bound_is_above_the_bound_and_passes_at_it():
    judged = ["insufficient_correct"] * 10 + ["insufficient_abstained"] * 30 + ["sufficient_correct"] * 40
    labelled = list(judged)  # every row labelled, the judge right: the upper bound is the labels' own bootstrap bound
    high = audit_of(judged, labelled, 1.0).corrected("answered_insufficient").high
    assert 0.25 < high < 1
    check, text = gate(audit_of(judged, labelled, high))
    assert check.check is Kind.CORRECTED_AUDIT_RATE and check.passed is True
    assert text.startswith("PASS audit answered_insufficient: corrected rate 0.25 [") and "80 labelled of 80 audited rows; uncorrected 0.25" in text
    check, text = gate(audit_of(judged, labelled, high - 0.001))
    assert check.passed is False and text.startswith("FAIL audit answered_insufficient: corrected rate 0.25")
    # the judge's own rate (0.25) is under this bound; the corrected interval's upper bound is not
    assert gate(audit_of(judged, labelled, 0.3))[0].passed is False


def test_too_few_labels_fail_the_corrected_gate_saying_how_many_more_or_fall_back_to_the_judge():
    judged = ["insufficient_correct"] * 10 + ["insufficient_abstained"] * 30 + ["sufficient_correct"] * 40
    labelled = [*judged[:25], *([None] * 55)]
    check, text = gate(audit_of(judged, labelled, 0.3))
    assert check.passed is False and check.check is Kind.CORRECTED_AUDIT_RATE
    assert "too few labels for a corrected rate (25 labelled audited rows in sufficiency and abstention, 5 more needed)" in text
    check, text = gate(audit_of(judged, labelled, 0.3, few_labels="judge"))
    assert check.check is Kind.AUDIT_RATE and check.passed is True
    assert "the judge's rate: 25 labelled rows, 5 more give a corrected one (gate.few_labels: judge)" in text


def test_labels_equal_to_the_judge_on_every_row_give_the_plain_rate_in_the_summary_lines_and_gate(tmp_path, run_score):
    rows, _ = build()
    rows = rows * 2  # 44 rows, 42 audited: above MIN_LABELS
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    first = tmp_path / "first.jsonl"
    assert run_score(source, metric=METRICS, min_pass_rate=["0"], output=str(first)).code == 0
    verdicts = read_jsonl(first)
    labelled = [{**row, "h_suff": v["sufficiency_passed"], "h_abst": v["abstention_passed"]} for row, v in zip(rows, verdicts)]
    summary = tmp_path / "summary.json"
    done = run_score(write_jsonl(tmp_path / "labelled.jsonl", labelled), metric=METRICS, min_pass_rate=["0"], summary_json=str(summary),
                     labels=["sufficiency=h_suff", "abstention=h_abst"], gate_on="corrected", max_rate=["answered_insufficient=0.9"])
    rate = json.loads(summary.read_text())["audit"]["rates"]["answered_insufficient"]
    assert rate["corrected"]["estimate"] == pytest.approx(10 / 22) and rate["value"] == pytest.approx(10 / 22)
    assert rate["corrected"]["labelled"] == 42 and rate["corrected"]["unlabelled"] == 0
    assert any(text.startswith("  answered_insufficient corrected by the labels: 45.5% [") and text.endswith("(42 labelled of 42 rows)")
               for text in lines(done.result.summary.audit))
    assert any("audit answered_insufficient: corrected rate 0.45 [" in text for text in done.text.splitlines()), done.text


def test_the_docs_worked_example_reproduces_its_hand_computed_figures():
    labelled = ["insufficient_correct"] * 6 + ["insufficient_abstained"] * 14 + ["sufficient_correct"] * 40
    judged = ["insufficient_correct"] * 4 + ["insufficient_abstained"] * 16 + ["sufficient_correct"] * 40
    unlabelled = ["insufficient_correct"] * 10 + ["insufficient_abstained"] * 40 + ["sufficient_correct"] * 90
    audit = Audit(max_rate={"answered_insufficient": 0.3}, gate_on={"answered_insufficient": "corrected"})
    audit.add(labelled + unlabelled)
    audit.add_pairs(judged + unlabelled, labelled + [None] * len(unlabelled))
    # by hand (docs/abstention-audit.md): lam = 0.06 / ((1 + 60/140) * (14 - 200 * 0.07**2) / 199)
    lam = 0.06 / ((1 + 60 / 140) * (14 - 200 * 0.07 ** 2) / 199)
    top = lam * 10 / 140 + 6 / 60 - lam * 4 / 60
    lam_b = (20 / 60 - (20 / 60) ** 2) / ((1 + 60 / 140) * (70 - 200 * 0.35 ** 2) / 199)
    bottom = lam_b * 50 / 140 + 20 / 60 - lam_b * 20 / 60
    assert (round(lam, 3), round(top, 4), round(lam_b, 3), round(bottom, 4)) == (0.642, 0.1031, 0.68, 0.3495)
    found = audit.corrected("answered_insufficient")
    assert found.estimate == pytest.approx(top / bottom, abs=1e-12) and round(found.estimate, 3) == 0.295
    assert audit.rate("answered_insufficient") == (16, 70)
    check, text = gate(audit)
    assert check.passed is False and text.startswith("FAIL audit answered_insufficient: corrected rate 0.29 [0.11, 0.44], upper bound 0.44 > 0.30")


def test_a_rate_no_labelled_row_counts_gets_the_labels_wilson_interval_not_one_of_no_width():
    from scipy.stats import binomtest

    cells = ["sufficient_correct"] * 40 + ["insufficient_abstained"] * 10
    audit = Audit()
    audit.add(cells)
    audit.add_pairs(cells, cells[:35] + [None] * 15)
    found = audit.corrected("abstained_sufficient")
    wilson = binomtest(0, 35).proportion_ci(confidence_level=0.95, method="wilson")  # 35 labelled rows, all on the sufficient side
    assert found.estimate == 0.0 and (found.low, found.high) == pytest.approx((0.0, wilson.high))
    assert found.high > 0.09  # not [0, 0]: 0 of 35 does not show the rate is 0


def test_gate_on_may_name_an_audit_rate_and_too_few_labels_then_fail_its_gate(tmp_path, run_score):
    rows, _ = build()
    config = tmp_path / "ragjudge.yaml"
    config.write_text("gate:\n  gate_on: {answered_insufficient: corrected, '*': judge}\n", encoding="utf-8")
    labelled = [{**row, "h_suff": "yes", "h_abst": "no"} if i < 5 else row for i, row in enumerate(rows)]
    done = run_score(write_jsonl(tmp_path / "in.jsonl", labelled), metric=METRICS, min_pass_rate=["0"], config=str(config),
                     labels=["sufficiency=h_suff", "abstention=h_abst"], max_rate=["answered_insufficient=0.9", "abstained_sufficient=0.9"])
    assert done.code == 1, done.text
    assert "FAIL audit answered_insufficient: too few labels for a corrected rate (5 labelled audited rows" in done.text
    assert "PASS audit abstained_sufficient: rate" in done.text  # gated on the judge: '*': judge


@pytest.mark.parametrize(("labels", "lacking"), [
    ([], "give labels.sufficiency labels.abstention (--labels sufficiency=COLUMN --labels abstention=COLUMN)"),
    (["abstention=h_abst"], "and sufficiency has no labels column: give labels.sufficiency (--labels sufficiency=COLUMN)"),
])
def test_a_corrected_audit_gate_without_both_labels_is_refused_before_any_call(tmp_path, run_score, judge, labels, lacking):
    # it judged every row, then failed exit 1 "no labels for both sufficiency and abstention" (said so with abstention labelled too)
    rows, _ = build()
    config = tmp_path / "ragjudge.yaml"
    config.write_text("gate:\n  gate_on: {answered_insufficient: corrected, '*': judge}\n", encoding="utf-8")
    labelled = [{**row, "h_suff": "yes", "h_abst": "no"} for row in rows]
    done = run_score(write_jsonl(tmp_path / "in.jsonl", labelled), metric=METRICS, min_pass_rate=["0"], config=str(config),
                     labels=labels, max_rate=["answered_insufficient=0.9"])
    assert done.code == 2, done.text
    assert "gate.gate_on: corrected gates the audit rate answered_insufficient (gate.max_rate) on labels of sufficiency and abstention" in done.error
    assert lacking in done.error and "or gate it on the judge (gate.gate_on: {answered_insufficient: judge})" in done.error
    assert judge.calls == 0
