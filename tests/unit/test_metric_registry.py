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
                                                                  "abstention")
    assert metrics.defaults() == ("sufficiency", "completeness")  # issue 63's metrics are judged when named
    for metric in metrics.BUILT_IN:
        assert RawConfig.model_fields[metric.name].description == metric.about
        assert Config.model_fields[metric.name].annotation is judge_class(metric.name).Settings
