"""A new user's finds on the abstention audit's options (2026-12-07): the metrics ``--audit
abstention`` adds count as judged for every check; a per-metric ``gate.gate_on`` entry overrides
``--gate-on``; the audit gate's lines name a bound neutrally; abstention (a measurement, not a
pass/fail) is left out of the failing rows."""

from __future__ import annotations

from conftest import write_jsonl
from helpers import audit_rows as build
from ragjudge.reports.console import failing_lines

LABELS = ["sufficiency=h_suff", "abstention=h_abst"]


def labelled(tmp_path, count: int | None = None) -> str:
    rows, _ = build()
    rows = [{**row, "h_suff": "yes", "h_abst": "no"} if count is None or i < count else row for i, row in enumerate(rows)]
    return write_jsonl(tmp_path / "in.jsonl", rows)


def test_labels_of_the_metrics_audit_abstention_adds_are_accepted(tmp_path, run_score):
    # it was exit 2 "this run does not judge 'abstention' ... give -m sufficiency -m completeness -m abstention":
    # the labels were checked against the run's metrics before --audit abstention added its own
    done = run_score(labelled(tmp_path), audit=["abstention"], labels=LABELS, min_pass_rate=["0"])
    assert done.code == 0, done.text
    assert done.result.summary.audit is not None and done.result.summary.audit.pairs is not None
    assert "abstention" in done.result.summary.metrics


def test_thresholds_and_bounds_on_the_added_metrics_are_accepted(tmp_path, run_score):
    done = run_score(labelled(tmp_path), audit=["abstention"], min_pass_rate=["0"], set_=["thresholds.abstention=0.5",
                     "gate.max_error_rate.abstention=1"], max_skip_rate=["abstention=1"])
    assert done.code == 0, done.text


def test_a_per_metric_gate_on_overrides_the_flag(tmp_path, run_score):
    # --gate-on corrected with completeness unlabelled was exit 2 "completeness has no labels column" even with
    # --set gate.gate_on.completeness=judge: the audit's corrected rates need sufficiency and abstention labels only
    metrics = ["sufficiency", "completeness", "abstention"]
    refused = run_score(labelled(tmp_path), metric=metrics, labels=LABELS, max_rate=["answered_insufficient=0.6"], gate_on="corrected",
                        min_pass_rate=["sufficiency=0"])
    assert refused.code == 2 and "completeness has no labels column" in refused.error  # its pass-rate bound, gated on labels
    done = run_score(labelled(tmp_path), metric=metrics, labels=LABELS, max_rate=["answered_insufficient=0.6"], gate_on="corrected",
                     min_pass_rate=["sufficiency=0"], set_=["gate.gate_on.completeness=judge"])
    assert done.code in (0, 1) and not done.error, done.text
    assert any(text.startswith("FAIL audit answered_insufficient: too few labels for a corrected rate") for text in done.lines), done.text
    assert any(text.startswith("FAIL completeness: pass rate 0.29 < 1.00") for text in done.lines), done.text  # on the judge


def test_a_corrected_audit_gate_not_checked_names_its_bound_as_given(tmp_path, run_score):
    # it said "gate.max_rate 0.6" to a user who gave --max-rate answered_insufficient=0.6
    done = run_score(labelled(tmp_path, 5), audit=["abstention"], labels=LABELS, min_pass_rate=["0"], gate_on="corrected",
                     max_rate=["answered_insufficient=0.6"])
    line = next((text for text in done.lines if "audit answered_insufficient" in text), done.text)
    assert "gate.max_rate" not in line and "bound answered_insufficient=0.6 was not checked" in line, line


def test_abstention_is_not_listed_among_the_failing_rows(tmp_path, run_score):
    # every answered row was listed as failing ("... or abstention_passed is false"), though abstention's floor is 0
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), audit=["abstention"], output=str(tmp_path / "out.jsonl"),
                     min_pass_rate=["0"], max_rate=["answered_insufficient=0"])  # the audit's gate fails: a check of no metric
    assert done.code == 1, done.text
    summary = done.result.summary
    assert summary.metrics["abstention"].failed > 0  # its counts are kept
    text = "\n".join(failing_lines(summary, str(tmp_path / "out.jsonl"), None, gate=done.gate, most=100))
    assert "abstention" not in text, text
    total = sum(m.failed + m.error for name, m in summary.metrics.items() if name != "abstention")
    assert text.startswith("failing rows (") and f" of {total}):" in text.splitlines()[0], text
    from ragjudge.reports.annotations import commands

    annotated = "\n".join(commands(summary, None, None))
    failing = sum(m.failed for name, m in summary.metrics.items() if name != "abstention")
    shown = annotated.count("::error ")
    assert "ragjudge abstention failed" not in annotated and f"::notice title=ragjudge::{failing - shown} more failing row(s)" in annotated, annotated
    from ragjudge.reports.summary import summary_dict

    assert summary_dict(summary, done.gate)["metrics"]["abstention"]["failed_rows"]["count"] == summary.metrics["abstention"].failed


def test_abstention_gated_on_a_floor_the_user_set_lists_its_failing_rows(tmp_path, run_score):
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), audit=["abstention"], min_pass_rate=["0", "abstention=0.9"])
    assert done.code == 1, done.text
    assert "abstention" in "\n".join(failing_lines(done.result.summary, None, None, gate=done.gate, most=100))


def test_gate_on_entries_from_any_layer_override_one_value(tmp_path):
    from ragjudge import options

    # (a pass-rate floor of 0: no metric's pass rate is gated, so none needs labels)
    config = tmp_path / "ragjudge.yaml"
    config.write_text("gate:\n  gate_on: {completeness: judge}\n", encoding="utf-8")
    over_file = options.load_layers(str(config), {"gate_on": "corrected", "min_pass_rate": ["0"]}).config.gate
    over_set = options.load_layers(None, {"gate_on": "corrected", "min_pass_rate": ["0"]}, ["gate.gate_on.completeness=judge"]).config.gate
    entry_over_value = options.load_layers(None, {"min_pass_rate": ["0"]}, ["gate.gate_on=corrected", "gate.gate_on.completeness=judge"]).config.gate
    for gate in (over_file, over_set, entry_over_value):
        assert (gate.gates_on("completeness"), gate.gates_on("sufficiency"), gate.gates_on("answered_insufficient")) == ("judge", "corrected", "corrected")
    assert options.load_layers(None, {"gate_on": "corrected", "min_pass_rate": ["0"]}).config.gate.gate_on == "corrected"  # one value stays one


def test_a_floor_named_for_other_metrics_keeps_abstentions_built_in_floor_of_0(tmp_path, run_score):
    # --min-pass-rate sufficiency=0 replaced the map of built-in floors: abstention fell to 1.0 and every answered row failed it
    rows, _ = build()
    done = run_score(write_jsonl(tmp_path / "in.jsonl", rows), audit=["abstention"], min_pass_rate=["sufficiency=0", "completeness=0"])
    assert done.code == 0, done.text
    assert done.result.summary.metrics["abstention"].min_pass_rate == 0.0
