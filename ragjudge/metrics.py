"""The built-in metrics: one registry line each (``BUILT_IN``). A metric is a module under
``ragjudge/judges/`` holding its ``Judge`` subclass (prompt, version, parsing, decision, output
columns) with its ``Settings`` model (the config section named after the metric); this line
makes it a metric: the config's section (``ragjudge.config`` builds ``RawConfig`` from it, and
``ragjudge.settings`` types the section with the judge's own ``Settings``), the judges'
registry (``ragjudge.judges.judge_class``), ``--metric``, the docs (``ragjudge.configdoc``).

Plain data, importing nothing: the config (below the judges) reads it too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One built-in metric: its ``name`` (``-m NAME``, the config section ``NAME:``, the output
    columns ``NAME_*``), the ``module`` holding its judge and the judge's class name (``judge``),
    what its config section holds (``about``, said in the docs and ``ragjudge config show``),
    whether a run judges it when no metric is named (``default``), and the pass-rate floor of the gate
    by default (``min_pass_rate``; 0.0 for a metric whose pass is not a quality, as abstention's)."""

    name: str
    module: str
    judge: str
    about: str
    default: bool = True
    min_pass_rate: float = 1.0


BUILT_IN: tuple[Metric, ...] = (
    Metric("sufficiency", "ragjudge.judges.sufficiency", "SufficiencyJudge",
           "sufficiency's own settings: probability thresholds, the evidence check, the order of the reply"),
    Metric("completeness", "ragjudge.judges.completeness", "CompletenessJudge", "completeness's own settings: how the score is read"),
    Metric("passage_relevance", "ragjudge.judges.passage_relevance", "PassageRelevanceJudge",
           "passage_relevance's own settings: the k of the score, the ks of the precision columns, a probability threshold",
           default=False),
    Metric("sufficient_k", "ragjudge.judges.sufficient_k", "SufficientKJudge",
           "sufficient_k's own settings: the top-k a row must be sufficient by, the check of the search", default=False),
    Metric("abstention", "ragjudge.judges.abstention", "AbstentionJudge", "abstention's own settings: the probability threshold",
           default=False, min_pass_rate=0.0),
)


def names() -> tuple[str, ...]:
    """The built-in metrics' names, in order."""
    return tuple(metric.name for metric in BUILT_IN)


def defaults() -> tuple[str, ...]:
    """The metrics a run judges when none is named."""
    return tuple(metric.name for metric in BUILT_IN if metric.default)


def register(metric: Metric) -> None:
    """Add ``metric`` to ``BUILT_IN`` (replacing one of its name), before ``ragjudge.config`` is
    imported: the config's sections are built from this registry once, when it is. For a
    checkout's own metric, add its line to ``BUILT_IN`` instead; this is for tests and plugins."""
    global BUILT_IN
    BUILT_IN = (*(m for m in BUILT_IN if m.name != metric.name), metric)


__all__ = ["BUILT_IN", "Metric", "defaults", "names", "register"]
