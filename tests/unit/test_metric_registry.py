"""A metric is one module and one registry line (``ragjudge.metrics``): a throwaway metric added
that way is a config section typed by its own settings, a ``-m`` name, columns in the scored
table, a gate bound and a section of ``ragjudge config show``, with nothing else touched."""

from __future__ import annotations


def test_the_registry_is_what_the_config_and_the_judges_read():
    from ragjudge import metrics
    from ragjudge.config import METRICS, RawConfig
    from ragjudge.judges import BUILT_IN, judge_class
    from ragjudge.settings import Config

    assert METRICS == metrics.names() == tuple(BUILT_IN) == ("sufficiency", "completeness", "passage_relevance", "sufficient_k",
                                                                  "abstention", "pairwise")
    assert metrics.defaults() == ("sufficiency", "completeness")  # issue 63's metrics are judged when named
    for metric in metrics.BUILT_IN:
        assert RawConfig.model_fields[metric.name].description == metric.about
        assert Config.model_fields[metric.name].annotation is judge_class(metric.name).Settings


def test_a_metrics_other_facts_are_read_from_its_registry_line(monkeypatch):
    # issue 65 item 5: calibrate's settings, the embedded judge's calibrated settings and pass mark, the keys that moved
    # and per-passage labels are the Metric's own fields, read where they are used: no table keyed by metric elsewhere
    from dataclasses import replace

    from ragjudge import calibrate, counting, local, metrics
    from ragjudge.config import MOVED

    knob = metrics.Knob("threshold", (2.0, 3.0, 4.0), bounds=(1.0, 5.0))
    changed = replace(metrics.find("completeness"), knobs=(knob,), embedded={"statement_evidence": 0.5}, embedded_threshold=3.5,
                      labels="passage")
    monkeypatch.setattr(metrics, "BUILT_IN", tuple(changed if m.name == "completeness" else m for m in metrics.BUILT_IN))
    assert calibrate.knobs_of("completeness") == (knob,) and calibrate.knobs_of("groundedness") == ()
    assert local.calibrated_settings()["completeness"] == {"statement_evidence": 0.5}
    assert local.calibrated_thresholds() == {"completeness": 3.5}
    assert counting.per_passage("completeness") and not counting.per_passage("sufficiency")
    assert {key for key, metric in MOVED.items() if metric == "completeness"} == set(changed.moved)
    assert metrics.find("passage_relevance").labels == "passage" and metrics.find("nope") is None
