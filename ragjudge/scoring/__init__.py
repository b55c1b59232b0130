"""``Scorer``: a pandas DataFrame in, the same rows with each metric's verdict out.

    from ragjudge import Scorer
    with Scorer(metrics=["sufficiency"], model="openai/gpt-4o-mini") as scorer:
        scored = scorer.score(df)          # or: await scorer.ascore(df)
    scored.frame, scored.summary, scored.notes

A ``Scorer`` is built once and reused for every batch: it owns the judges (one per metric),
the model chokepoint (``ragjudge.model``: cache, limits, retries) and the embedded model.
Its judge calls run on ragjudge's own event loop (``ragjudge._loop``), so ``score`` works
in a plain script, inside a running event loop and from several threads at once.

Output columns, after the input's own (an input column with one of these names is
replaced), per metric ``M``: ``M_score`` (float64; sufficiency 1.0/0.0, completeness 1..5),
``M_passed`` (bool, null unless ok), ``M_rationale``, ``M_status`` (ok / error / skipped),
``M_error``, ``M_missing`` (list of strings), ``M_raw`` (the judge's reply, kept on error
rows), ``M_cached`` (bool), ``M_prompt_tokens``, ``M_completion_tokens`` (int64),
``M_cost_usd`` (float64, USD; null when the model has no price), ``M_tokens_estimated``
(bool: the reply reported no token counts, so they were estimated), ``M_probability`` (float64
in 0..1: P(yes) of a binary metric, P(pass) of a scored one; null where the judge gives no
probability), for a scored metric ``M_distribution`` (list of float64: each level's probability,
lowest first) and ``M_confidence`` (float64, the provider's concentration measure), with ``judge.samples`` > 1
``M_agreement`` (float64), then each judge's own columns (``sufficiency_mode``,
``sufficiency_p_yes``), ``diagnosis`` (string, when both sufficiency and completeness are judged:
ok / generation / retrieval / beyond_context, null unless both are ok; ``ragjudge.diagnosis``),
``removed_instructions`` (list of strings: sentences addressed to the
judge, removed before judging) and ``judge_model``. ``output_schema`` gives them exactly.

The run's set-up (first chunk, mapping, needs, notes, option checks) is ``ragjudge.plan``'s
``RunPlan``.

The package, by concern: ``scorer`` (``Scorer``: set-up, jobs, interruption), ``chain`` (a row's
calls: the model, a panel's members, a cascade's stages), ``schema`` (the output columns and the
framing of verdicts), ``intake`` (a DataFrame checked and read as rows), ``trace_order`` (rows
read from traces) and ``library`` (``score``, ``ascore``).
"""

from __future__ import annotations

from ragjudge.scoring.chain import unexpected
from ragjudge.scoring.intake import as_frame, row_dicts
from ragjudge.scoring.library import ascore, score
from ragjudge.scoring.schema import COMMON_COLUMNS, SCALE_COLUMNS, Scored, arrow_type, removed_note
from ragjudge.scoring.scorer import BLOCK, DIRECT_BATCH, INTERRUPT_GRACE_S, Job, Scorer, check_decision_metrics, idle_bounds

__all__ = ["BLOCK", "COMMON_COLUMNS", "DIRECT_BATCH", "INTERRUPT_GRACE_S", "SCALE_COLUMNS", "Job", "Scored", "Scorer", "arrow_type",
           "as_frame", "ascore", "check_decision_metrics", "idle_bounds", "removed_note", "row_dicts", "score", "unexpected"]
