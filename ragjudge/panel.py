"""A panel of judges: several judge models decide each row together (``judge.panel``).

Plain values and arithmetic, below every other layer: the members' names (``member_name``),
the rules' names and the default quorum, and the counts the summary keeps of a panel (``PanelCounts``: each member's pass
rate, errors and cost, the members' pairwise agreement and Fleiss' kappa), which add up over
chunks as the rest of ``ragjudge.gate.Summary`` does.

Rules (``judge.panel_rule``; applied by ``ragjudge.judges.panel_rule.decide``), over the members that answered (status ok):

- ``majority`` (default): a yes/no metric says yes when more than half of the members say yes
  (a tie is no, as ``judge.samples`` decides); on a scale, the lower median of the members'
  scores (which passes exactly when more than half of the members pass);
- ``all``: the lowest score (yes only when every member says yes);
- ``any``: the highest score (yes when one member says yes);
- ``mean``: the lower median of the members' scores (``statistics.median_low``: the lower
  middle score on an even count), for scales such as completeness; on a yes/no metric the
  same verdict as ``majority``.

``judge.panel_quorum`` members must answer (default: more than half of the members); a
member that fails (auth, down, an unreadable reply) leaves the row to the others while the
quorum holds, and the row's rationale names it and why; below the quorum the row is an
error naming every member's failure.

Verga et al., "Replacing Judges with Juries" (2024), is the reference for panels of several
smaller judges; Fleiss (1971) for kappa.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

OK, ERROR = "ok", "error"  # a verdict's statuses (``ragjudge.types``; this module imports nothing of the project's)

RULES: tuple[str, ...] = ("majority", "all", "any", "mean")
PANEL = "panel"  # the key of a verdict's ``details`` that holds its members' results


def member_name(model: str) -> str:
    """The column-safe name of a panel member from its ``model`` string: the part after the
    last ``/``, lower case, every run of characters other than letters and digits one ``_``
    (``openai/gpt-4o-mini`` -> ``gpt_4o_mini``). Columns are ``M_panel_NAME_score`` etc."""
    tail = model.rstrip("/").rsplit("/", 1)[-1]
    return re.sub(r"[^a-z0-9]+", "_", tail.lower()).strip("_") or "judge"


def stage_label(stage: str) -> str:
    """The column-safe name of a cascade stage (``judge.cascade``: a model string, or ``panel``,
    the configured panel): ``panel``, else ``member_name(stage)`` (columns ``M_cascade_NAME_*``)."""
    return PANEL if stage == PANEL else member_name(stage)


def without_members(names: list[str]) -> list[str]:
    """``names`` (the metrics a scored table's ``NAME_status`` columns suggest) less the panel
    members' (``M_panel_NAME``: the columns ``M_panel_NAME_status`` etc. are ``M``'s) and a
    cascade's stages' (``M_cascade_STAGE``: ``M_cascade_STAGE_status`` etc. are ``M``'s; a row
    the first stage decided leaves the later stages' cells blank; ``M``'s own columns hold the
    cascade's final verdict)."""
    return [name for name in names
            if not any(name.startswith((f"{other}_panel_", f"{other}_cascade_")) for other in names if other != name)]


def default_quorum(members: int) -> int:
    """The quorum of a panel of ``members`` when ``judge.panel_quorum`` is not set: more than
    half of them (2 of 3, 3 of 4)."""
    return members // 2 + 1


def fleiss_kappa(table: list[list[int]]) -> float | None:
    """Fleiss' kappa of ``table``: one row per subject, one column per category, each cell the
    number of raters who put that subject in that category (every row sums to the same number
    of raters n >= 2). kappa = (P_bar - P_e) / (1 - P_e), with P_bar the mean over subjects of
    (sum_j n_ij^2 - n) / (n (n - 1)) and P_e the sum over categories of the squared share of all
    ratings in it (Fleiss, 1971). None when undefined: no subjects, fewer than two raters, or
    P_e = 1 (every rating in one category). Raises ``ValueError`` for rows of unequal sums."""
    if not table:
        return None
    raters = sum(table[0])
    if any(sum(row) != raters for row in table):
        raise ValueError("every subject needs the same number of ratings")
    totals = [sum(column) for column in zip(*table)]
    squares = sum(cell * cell for row in table for cell in row)
    return _kappa(len(table), raters, squares, totals)


def _kappa(subjects: int, raters: int, squares: int, totals: list[int]) -> float | None:
    """Fleiss' kappa from its sums: ``subjects`` rows of ``raters`` ratings each, ``squares``
    the sum over rows and categories of the squared counts, ``totals`` the ratings per category."""
    if subjects == 0 or raters < 2:
        return None
    ratings = subjects * raters
    p_bar = (squares - ratings) / (ratings * (raters - 1))
    p_e = sum((t / ratings) ** 2 for t in totals)
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1 - p_e)


@dataclass
class MemberCounts:
    """One panel member's counts over a metric's rows: ``ok`` (answered), ``error``,
    ``passed`` (of the ok rows), ``cost_usd`` (USD of its calls; None once a paid call had no
    known price) and ``calls`` (provider requests)."""

    model: str = ""
    ok: int = 0
    error: int = 0
    passed: int = 0
    cost_usd: float | None = 0.0
    calls: int = 0
    errors_by: dict[str, int] = field(default_factory=dict)  # why it did not answer -> rows (reasons cut at 300 characters)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.ok if self.ok else None

    def merge(self, other: "MemberCounts") -> "MemberCounts":
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        errors = dict(self.errors_by)
        for reason, count in other.errors_by.items():
            errors[reason] = errors.get(reason, 0) + count
        return MemberCounts(self.model or other.model, self.ok + other.ok, self.error + other.error, self.passed + other.passed, cost,
                            self.calls + other.calls, errors)


@dataclass
class PanelCounts:
    """A metric's panel figures over its rows, added row by row (``add``) and over chunks
    (``merge``): per member its ``MemberCounts`` (with ``errors_by``: why it did not answer -> rows); per pair of members the rows both answered
    and those where they agreed (pass / fail); the sums of Fleiss' kappa over the rows every
    member answered (categories: pass, fail); ``split`` the rows where the members that
    answered did not all agree (the disagreements)."""

    members: dict[str, MemberCounts] = field(default_factory=dict)
    pairs: dict[str, list[int]] = field(default_factory=dict)  # "a|b" -> [agreed, both answered]
    full_rows: int = 0  # rows every member answered (kappa's subjects)
    squares: int = 0
    totals: list[int] = field(default_factory=lambda: [0, 0])  # ratings pass, fail over the full rows
    split: int = 0

    def add(self, members: list[dict[str, Any]]) -> None:
        """Count one row's ``members`` (``member_result`` dicts, in the panel's order)."""
        for item in members:
            counts = self.members.setdefault(item["name"], MemberCounts(item.get("model") or ""))
            if item["status"] == OK:
                counts.ok += 1
                counts.passed += bool(item["passed"])
            elif item["status"] == ERROR:
                counts.error += 1
                reason = str(item.get("error") or "error")[:300]
                counts.errors_by[reason] = counts.errors_by.get(reason, 0) + 1
            cost = item.get("cost_usd")
            counts.cost_usd = None if counts.cost_usd is None or cost is None else counts.cost_usd + cost
            counts.calls += int(item.get("calls") or 0)
        answered = [item for item in members if item["status"] == OK]
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                pair = self.pairs.setdefault(f"{a['name']}|{b['name']}", [0, 0])
                if a["status"] == OK and b["status"] == OK:
                    pair[1] += 1
                    pair[0] += bool(a["passed"]) == bool(b["passed"])
        if len({bool(item["passed"]) for item in answered}) > 1:
            self.split += 1
        if len(answered) == len(members) and len(members) >= 2:
            yes = sum(bool(item["passed"]) for item in answered)
            no = len(answered) - yes
            self.full_rows += 1
            self.squares += yes * yes + no * no
            self.totals[0] += yes
            self.totals[1] += no

    def merge(self, other: "PanelCounts | None") -> "PanelCounts":
        """These counts and ``other``'s (the same panel over other rows) added together."""
        if other is None:
            return self
        out = PanelCounts()
        for name in dict.fromkeys([*self.members, *other.members]):
            mine, theirs = self.members.get(name), other.members.get(name)
            out.members[name] = mine.merge(theirs) if mine and theirs else (mine or theirs)  # type: ignore[assignment]
        for key in dict.fromkeys([*self.pairs, *other.pairs]):
            a, b = self.pairs.get(key, [0, 0]), other.pairs.get(key, [0, 0])
            out.pairs[key] = [a[0] + b[0], a[1] + b[1]]
        out.full_rows = self.full_rows + other.full_rows
        out.squares = self.squares + other.squares
        out.totals = [self.totals[0] + other.totals[0], self.totals[1] + other.totals[1]]
        out.split = self.split + other.split
        return out

    @property
    def kappa(self) -> float | None:
        """Fleiss' kappa of the members' pass / fail over the rows every member answered (None
        when undefined: no such row, or every rating the same)."""
        return _kappa(self.full_rows, len(self.members), self.squares, self.totals)

    def lines(self, metric: str) -> list[str]:
        """The panel's lines for the console and the Markdown summary: per member its pass rate,
        counts, cost and most common failure, then the agreement, e.g. ``sufficiency: panel
        fake_judge pass rate 0.46 (24 ok, 0 errors, cost unknown)`` ... ``sufficiency: panel
        agreement fake_judge|fake_lenient 0.67, ...; Fleiss' kappa 0.31 over 24 rows; 12 rows
        split``."""
        out = []
        for name, m in self.members.items():
            rate = "-" if m.pass_rate is None else f"{m.pass_rate:.2f}"
            cost = "cost unknown" if m.cost_usd is None else f"${m.cost_usd:.4f}"
            worst = max(m.errors_by.items(), key=lambda item: item[1], default=None)
            failing = "" if worst is None else f"; most often: {worst[0]} ({_rows(worst[1])})"
            out.append(f"{metric}: panel {name} pass rate {rate} ({m.ok} ok, {m.error} errors, {cost}){failing}")
        pairs = ", ".join(f"{key} {'-' if value is None else f'{value:.2f}'}" for key, value in self.agreement().items())
        kappa = "-" if self.kappa is None else f"{self.kappa:.2f}"
        out.append(f"{metric}: panel agreement {pairs}; Fleiss' kappa {kappa} over {_rows(self.full_rows)} every member answered; "
                   f"{_rows(self.split)} where the members disagree")
        return out

    def agreement(self) -> dict[str, float | None]:
        """Per pair of members ("a|b"), the share of the rows both answered where they agreed."""
        return {key: (agreed / both if both else None) for key, (agreed, both) in self.pairs.items()}

    def to_dict(self) -> dict[str, Any]:
        """The summary JSON's ``panel`` of a metric: ``members`` (per member: model, ok, error,
        passed, pass_rate, cost_usd, calls, errors_by: the 20 most common reasons -> rows), ``pairwise_agreement`` (per "a|b": 0..1 or None),
        ``fleiss_kappa`` (or None), ``rows_all_answered`` and ``disagreements`` (rows)."""
        return {
            "members": {name: {"model": m.model, "ok": m.ok, "error": m.error, "passed": m.passed, "pass_rate": m.pass_rate,
                               "cost_usd": m.cost_usd, "calls": m.calls,
                               "errors_by": dict(sorted(m.errors_by.items(), key=lambda item: -item[1])[:20])}
                        for name, m in self.members.items()},
            "pairwise_agreement": self.agreement(),
            "fleiss_kappa": self.kappa,
            "rows_all_answered": self.full_rows,
            "disagreements": self.split,
        }


def members_of(details: Any) -> list[dict[str, Any]] | None:
    """The members' results a verdict's ``details`` holds (``decide``), else None."""
    if not isinstance(details, dict):
        return None
    panel = details.get(PANEL)
    return panel.get("members") if isinstance(panel, dict) else None


__all__ = ["PANEL", "RULES", "MemberCounts", "PanelCounts", "default_quorum", "fleiss_kappa", "member_name", "members_of", "stage_label",
           "without_members"]


def _rows(number: int) -> str:
    """``number`` rows as a reader writes them: "1 row", "2 rows" (this module imports no other of ours)."""
    return f"{number} row{'' if number == 1 else 's'}"
