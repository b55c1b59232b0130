"""The built-in metrics: one registry line each (``BUILT_IN``). A metric is a module under
``ragjudge/judges/`` holding its ``Judge`` subclass (prompt, version, parsing, decision, output
columns) with its ``Settings`` model (the config section named after the metric); this line
makes it a metric: the config's section (``ragjudge.config`` builds ``RawConfig`` from it, and
``ragjudge.settings`` types the section with the judge's own ``Settings``), the judges'
registry (``ragjudge.judges.judge_class``), ``--metric``, the docs (``ragjudge.configdoc``).

Plain data, importing nothing: the config (below the judges) reads it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _grid(low: float, high: float, step: float) -> tuple[float, ...]:
    """``low``, ``low + step``, ... ``high``, rounded to 2 decimals."""
    return tuple(round(low + step * i, 2) for i in range(int(round((high - low) / step)) + 1))


PROBABILITY = _grid(0.05, 0.95, 0.01)  # a probability threshold's candidates
SHARE = (None, *_grid(0.1, 1.0, 0.1))  # a share's candidates (None: the check off)


@dataclass(frozen=True)
class Knob:
    """One decision setting ``ragjudge calibrate`` chooses: ``key`` in the metric's config section
    (``threshold``: the metric's pass mark, ``thresholds.<metric>``), the ``candidates`` tried
    (None: the setting off), whether it is ``numeric`` (moved by +-0.02 and +-0.05 for the
    stability figures), its ``bounds`` (the lowest and highest value the setting may hold, 2
    decimals: a move past them is not measured), and whether setting it makes the request ask for
    log-probabilities (``logprobs``: a cache key of its own, so a setting that is on is never
    tried off, whose replies are not cached)."""

    key: str
    candidates: tuple[Any, ...]
    numeric: bool = True
    bounds: tuple[float, float] = (0.01, 1.0)
    logprobs: bool = False


@dataclass(frozen=True)
class Metric:
    """One built-in metric: its ``name`` (``-m NAME``, the config section ``NAME:``, the output
    columns ``NAME_*``), the ``module`` holding its judge and the judge's class name (``judge``),
    what its config section holds (``about``, said in the docs and ``ragjudge config show``),
    whether a run judges it when no metric is named (``default``), and the pass-rate floor of the gate
    by default (``min_pass_rate``; 0.0 for a metric whose pass is not a quality, as abstention's).

    Its other facts: the decision settings ``ragjudge calibrate`` chooses, in the order its search
    tries them (``knobs``; none: calibrate refuses the metric); the keys of its section that were
    once given under ``judge:`` or as flat keywords and still load there, with a note (``moved``);
    the settings of its section the embedded judge (``local/qwen2.5-coder-1.5b``) gets where the
    config leaves them unset (``embedded``, key -> value, fitted on labelled rows by
    bench/quality.py; configs/local.yaml explains each) and its pass mark likewise
    (``embedded_threshold``; None: the judge's own); and what one cell of its labels column holds
    (``labels``: ``row``, a label of the row's verdict; ``passage``, one relevance grade per
    retrieved passage, giving nDCG@k and recall@k, ``ragjudge.ranking``). What the trace sinks
    log (per span or per trace, a yes/no label or a score, MLflow's feedback name) is the judge's
    own: its ``needs``, ``kind`` and ``mlflow_name`` (``Judge.shape``), as a YAML definition's."""

    name: str
    module: str
    judge: str
    about: str
    default: bool = True
    min_pass_rate: float = 1.0
    knobs: tuple[Knob, ...] = ()
    moved: tuple[str, ...] = ()
    embedded: dict[str, Any] = field(default_factory=dict, hash=False)
    embedded_threshold: float | None = None
    labels: str = "row"


BUILT_IN: tuple[Metric, ...] = (
    Metric("sufficiency", "ragjudge.judges.sufficiency", "SufficiencyJudge",
           "sufficiency's own settings: probability thresholds, the evidence check, the order of the reply",
           knobs=(Knob("yes_threshold", (None, *PROBABILITY), bounds=(0.01, 0.99), logprobs=True),  # (0, 1), as the judge's options take them
                  Knob("fact_threshold", (None, *PROBABILITY), bounds=(0.01, 0.99), logprobs=True), Knob("fact_evidence", SHARE),
                  Knob("quote_check", (None, 0.0, *_grid(0.5, 1.0, 0.1)), bounds=(0.0, 1.0)), Knob("request_evidence", SHARE)),
           moved=("yes_threshold", "fact_threshold", "fact_evidence", "reasoning_first",
                  "mode", "ground_truth",  # these never were judge keys: flat keywords only
                  "quote_check", "request_evidence"),
           embedded={"yes_threshold": 0.85, "fact_threshold": 0.3, "fact_evidence": 0.7}),
    Metric("completeness", "ragjudge.judges.completeness", "CompletenessJudge", "completeness's own settings: how the score is read",
           knobs=(Knob("threshold", _grid(1.0, 5.0, 0.1), bounds=(1.0, 5.0)), Knob("statement_evidence", SHARE),
                  Knob("evidence_weight", SHARE, bounds=(0.0, 1.0))),
           moved=("expected_score", "coverage_score", "statement_evidence", "evidence_weight"),
           embedded={"coverage_score": True, "statement_evidence": 0.3}, embedded_threshold=2.9),
    Metric("passage_relevance", "ragjudge.judges.passage_relevance", "PassageRelevanceJudge",
           "passage_relevance's own settings: the k of the score, the ks of the precision columns, a probability threshold",
           default=False, labels="passage"),
    Metric("sufficient_k", "ragjudge.judges.sufficient_k", "SufficientKJudge",
           "sufficient_k's own settings: the top-k a row must be sufficient by, the check of the search", default=False),
    Metric("abstention", "ragjudge.judges.abstention", "AbstentionJudge", "abstention's own settings: the probability threshold",
           default=False, min_pass_rate=0.0),
    Metric("pairwise", "ragjudge.judges.pairwise", "PairwiseJudge", "pairwise's own settings: the two response columns compared, the order of the reply",
           default=False, min_pass_rate=0.0, embedded={"reason_first": True}),
)


def names() -> tuple[str, ...]:
    """The built-in metrics' names, in order."""
    return tuple(metric.name for metric in BUILT_IN)


def defaults() -> tuple[str, ...]:
    """The metrics a run judges when none is named."""
    return tuple(metric.name for metric in BUILT_IN if metric.default)


def find(name: str) -> Metric | None:
    """The built-in metric ``name``, None for any other name (a custom judge's)."""
    return next((metric for metric in BUILT_IN if metric.name == name), None)


def measured(name: str, floor: float) -> bool:
    """Whether metric ``name``, gated at the pass-rate ``floor`` (0..1) this run gives it, is a
    measurement rather than a pass/fail: a built-in metric whose pass is not a quality (its
    ``min_pass_rate`` is 0: abstention, where declining is neither good nor bad by itself) left at
    a floor of 0. Its "no" rows stay counted (the summary's ``failed_rows``) but are not failing
    rows: the console's list, the GitHub annotations and the Markdown report leave them out."""
    found = find(name)
    return found is not None and found.min_pass_rate == 0.0 and floor == 0.0


def register(metric: Metric) -> None:
    """Add ``metric`` to ``BUILT_IN`` (replacing one of its name), before ``ragjudge.config`` is
    imported: the config's sections are built from this registry once, when it is. For a
    checkout's own metric, add its line to ``BUILT_IN`` instead; this is for tests and plugins."""
    global BUILT_IN
    BUILT_IN = (*(m for m in BUILT_IN if m.name != metric.name), metric)


__all__ = ["BUILT_IN", "PROBABILITY", "SHARE", "Knob", "Metric", "defaults", "find", "names", "register"]
