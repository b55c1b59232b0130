"""Rank metrics of a row's retrieved passages against the team's per-passage labels
(``--labels passage_relevance=COL``, issue 63): nDCG@k and recall@k, and their means kept in the
summary.

A label cell is a list with one relevance grade per retrieved passage, in retrieved order: 0/1,
or graded relevance 0..3 (any number >= 0). JSON text of such a list is read too (a CSV cell).
The ranking scored is the retriever's own order; the judge never sees the labels, so these
figures measure the retriever against the labels, beside the judge's precision@k.

References: Järvelin and Kekäläinen, "Cumulated gain-based evaluation of IR techniques" (TOIS,
2002), with linear gain as trec_eval's ``ndcg_cut`` and scikit-learn's ``ndcg_score`` use:
DCG@k = sum over ranks i = 1..k of grade_i / log2(i + 1), nDCG@k = DCG@k / IDCG@k, IDCG@k the
DCG@k of the row's grades sorted from highest. recall@k: the passages labelled relevant (grade
> 0) among the first k, over all the row's passages labelled relevant (Manning, Raghavan and
Schütze, *Introduction to Information Retrieval*, 2008, ch. 8). Both are undefined (None) for a
row with no passage labelled relevant; such rows are left out of the means.

A row's label pass (``label_pass_at``): the row's grades read by the rule the judge's own pass
uses (``ragjudge.judges.passage_relevance``: precision@k at ``passage_relevance.k``, a passage
relevant at grade > 0, passed at score >= the metric's threshold), so that the label-corrected
pass rate (``ragjudge.corrected_rates``) and ``--gate-on corrected`` compare like with like.

Plain values and arithmetic, below every other layer, added over chunks as ``ragjudge.prefixes``
is."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

NDCG, RECALL = "ndcg", "recall"
DEFAULT_AT_K = [1, 3, 5]  # passage_relevance.at_k's default
PER_PASSAGE_K = 3  # the k of a per-passage judge's row score, precision@k, unless set (passage_relevance.k, a YAML judge's k:)


def ks_of(options: Any) -> list[int]:
    """The ks of the precision@k (and nDCG@k, recall@k) columns in a section of settings
    (``passage_relevance:``, a mapping or an object with ``at_k``), sorted; ``DEFAULT_AT_K`` when
    it has none. A per-passage YAML judge takes the run's, passage_relevance's (``--at-k``)."""
    ks = (options.get("at_k") if isinstance(options, dict) else getattr(options, "at_k", None)) or DEFAULT_AT_K
    return sorted({int(k) for k in ks})


def grades(cell: Any) -> list[float] | None:
    """A label cell -> its grades (one float >= 0 per passage, in retrieved order); None when the
    cell holds no such list (empty, text that is not a JSON list, a negative or non-number grade)."""
    if isinstance(cell, str):
        text = cell.strip()
        if not text.startswith("["):
            return None
        try:
            cell = json.loads(text)
        except ValueError:
            return None
    if hasattr(cell, "tolist") and not isinstance(cell, (list, tuple)):
        cell = cell.tolist()
    if not isinstance(cell, (list, tuple)):
        return None
    out: list[float] = []
    for item in cell:
        if isinstance(item, bool):
            out.append(float(item))
            continue
        try:
            value = float(item)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(value) or value < 0:
            return None
        out.append(value)
    return out


def precision_at(flags: list[bool], k: int) -> float:
    """Precision@k: the relevant passages among the first ``k`` of ``flags`` (in retrieved
    order), divided by ``k`` (trec_eval's ``P_k``: a list shorter than k counts the missing
    ranks as not relevant). 0..1."""
    return sum(1 for flag in flags[:k] if flag) / k


def label_pass_at(cell: Any, k: int, threshold: float, judged: Any = None) -> float | None:
    """A row's per-passage label ``cell`` (``grades``) as a row label: 1.0 when precision@``k`` of
    its passages labelled relevant (grade > 0) reaches ``threshold``, else 0.0, the judge's own
    pass rule; None when the cell holds no list of grades, or (``judged``: the judge's marks, one
    per passage, ``details["relevant"]`` of its verdict; None: not known) not one grade per passage."""
    found = grades(cell)
    if found is None or (judged is not None and len(judged) != len(found)):
        return None
    return 1.0 if precision_at([value > 0 for value in found], k) >= threshold else 0.0


def dcg(values: list[float], k: int) -> float:
    """DCG@k with linear gain: sum of ``values[i] / log2(i + 2)`` over the first ``k`` (i from 0)."""
    return sum(value / math.log2(i + 2) for i, value in enumerate(values[:k]))


def ndcg_at(labels: list[float], k: int) -> float | None:
    """nDCG@k of the retrieved order against ``labels`` (grades in retrieved order), 0..1; None
    when no passage is labelled relevant (IDCG is 0)."""
    ideal = dcg(sorted(labels, reverse=True), k)
    return None if ideal == 0 else dcg(labels, k) / ideal


def recall_at(labels: list[float], k: int) -> float | None:
    """recall@k: passages labelled relevant (grade > 0) among the first ``k`` over all labelled
    relevant, 0..1; None when none is."""
    relevant = sum(1 for value in labels if value > 0)
    return None if relevant == 0 else sum(1 for value in labels[:k] if value > 0) / relevant


def figures(labels: list[float], ks: list[int]) -> dict[str, dict[int, float | None]]:
    """``{"ndcg": {k: nDCG@k}, "recall": {k: recall@k}}`` for each k of ``ks``."""
    return {NDCG: {k: ndcg_at(labels, k) for k in ks}, RECALL: {k: recall_at(labels, k) for k in ks}}


@dataclass
class RankCounts:
    """The summary's sums of the rows' nDCG@k and recall@k: ``sums[name][k]`` and ``rows[name][k]``
    (rows where the figure is defined); ``labelled``: rows with a readable label list;
    ``unreadable``: rows whose cell held no list of grades, or as many as the row's passages."""

    sums: dict[str, dict[int, float]] = field(default_factory=lambda: {NDCG: {}, RECALL: {}})
    rows: dict[str, dict[int, int]] = field(default_factory=lambda: {NDCG: {}, RECALL: {}})
    labelled: int = 0
    unreadable: int = 0

    def add(self, found: dict[str, dict[int, float | None]]) -> None:
        """Count one row's ``figures``."""
        self.labelled += 1
        for name, by_k in found.items():
            for k, value in by_k.items():
                if value is not None:
                    self.sums[name][k] = self.sums[name].get(k, 0.0) + value
                    self.rows[name][k] = self.rows[name].get(k, 0) + 1

    def mean(self, name: str, k: int) -> float | None:
        """The mean of ``name`` (``ndcg`` / ``recall``) at ``k`` over the rows where it is defined."""
        n = self.rows[name].get(k, 0)
        return self.sums[name][k] / n if n else None

    def merge(self, other: "RankCounts | None") -> "RankCounts":
        if other is None:
            return self
        merged = RankCounts(labelled=self.labelled + other.labelled, unreadable=self.unreadable + other.unreadable)
        for name in (NDCG, RECALL):
            for k in sorted({*self.sums[name], *other.sums[name], *self.rows[name], *other.rows[name]}):
                merged.sums[name][k] = self.sums[name].get(k, 0.0) + other.sums[name].get(k, 0.0)
                merged.rows[name][k] = self.rows[name].get(k, 0) + other.rows[name].get(k, 0)
        return merged

    def to_dict(self) -> dict[str, Any]:
        """The summary JSON's ``rank_labels``: per k, the mean nDCG@k and recall@k and the rows behind each."""
        ks = sorted({*self.rows[NDCG], *self.rows[RECALL]})
        return {"labelled_rows": self.labelled, "unreadable": self.unreadable,
                **{f"{name}_at_{k}": {"mean": self.mean(name, k), "rows": self.rows[name].get(k, 0)} for name in (NDCG, RECALL) for k in ks}}


__all__ = ["DEFAULT_AT_K", "PER_PASSAGE_K", "RankCounts", "dcg", "figures", "grades", "ks_of", "label_pass_at", "ndcg_at", "precision_at",
           "recall_at"]
