"""The panel's decision of one row: its members' decided verdicts -> the panel's verdict, by
the rule and the quorum of ``judge.panel`` (the rules: ``ragjudge.panel``'s docstring)."""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

from ragjudge.panel import PANEL, members_of
from ragjudge.types import OK, Call, Usage, Verdict

__all__ = ["PANEL_COLUMNS", "decide", "member_result", "panel_values", "tempered"]


def member_result(name: str, model: str, verdict: Verdict) -> dict[str, Any]:
    """One member's part of a row (kept in the panel verdict's ``details["panel"]["members"]``
    and written as the columns ``M_panel_NAME_*``): ``name``, ``model``, ``status`` (ok / error
    / skipped), ``score`` (the metric's scale, None unless ok), ``passed`` (None unless ok),
    ``error`` (why it has no verdict, else None) and ``cost_usd`` (USD of this member's calls for
    the row; None when a paid call's price is unknown)."""
    ok = verdict.status == OK
    return {"name": name, "model": model, "status": verdict.status, "score": verdict.score if ok else None,
            "passed": verdict.passed if ok else None, "error": None if ok else verdict.error,
            "cost_usd": verdict.usage.cost_usd, "calls": verdict.usage.calls}


def decide(metric: str, verdicts: list[Verdict], names: list[str], models: list[str], rule: str, quorum: int,
           threshold: float, binary: bool) -> Verdict:
    """The panel's verdict of one row from its members' decided ``verdicts`` (one per member, in
    the order of ``names`` and ``models``; each already combined over ``judge.samples``).

    ``rule``: one of ``RULES`` (module docstring); ``quorum``: the members that must answer;
    ``threshold``: the metric's pass mark (a row passes at score >= threshold); ``binary``: a
    yes/no metric (scores 1.0 / 0.0). Returns an ok ``Verdict`` whose rationale is the first
    member's on the winning side, prefixed by the vote ("2 of 3 judges: yes"), with
    ``details["panel"]`` = ``{"members": [member_result...], "agreement": share of the members
    that answered agreeing with the panel's pass / fail}``; or, below the quorum, an error
    ``Verdict`` naming each member that failed and why (``input_error`` when every failure was
    the row's input; when no member answered and every failure had the same ``Reason``, e.g.
    interrupted or budget reached, that reason).
    ``usage`` is the members' total; ``cached`` true only when no member made a call."""
    members = [member_result(n, m, v) for n, m, v in zip(names, models, verdicts)]
    usage = Usage.total([v.usage for v in verdicts])
    cached = None if all(v.cached is None for v in verdicts) else all(v.cached is not False for v in verdicts)
    ok = [(n, v) for n, v in zip(names, verdicts) if v.status == OK]
    failed = [(n, v) for n, v in zip(names, verdicts) if v.status != OK]
    if len(ok) < quorum:
        reasons = "; ".join(f"{n}: {v.error or v.status}" for n, v in failed)
        text = (f"panel quorum not met: {len(ok)} of {len(verdicts)} judges answered (quorum {quorum})"
                + (f"; {reasons}" if reasons else ""))
        kinds = {v.reason for _, v in failed}
        out = Verdict.failed(metric, text, mode=verdicts[0].mode, usage=usage,
                             input_error=bool(failed) and all(v.input_error for _, v in failed))
        if len(kinds) == 1 and None not in kinds and len(ok) == 0:
            out.reason = kinds.pop()
            out.error = out.reason.value  # the counts read interruptions and the budget from the reason
            out.details = {PANEL: {"members": members, "agreement": None, "note": text}}
        else:
            out.details = {PANEL: {"members": members, "agreement": None}}
        out.cached = cached if cached is not True else None
        return out
    scores = [float(v.score) for _, v in ok]  # type: ignore[arg-type]
    if rule == "all":
        score = min(scores)
    elif rule == "any":
        score = max(scores)
    else:  # majority and mean: the lower median; on yes/no, yes only when more than half say yes
        score = float(statistics.median_low(scores))
    passed = bool(score >= threshold)
    agreeing = [(n, v) for n, v in ok if bool(v.passed) == passed]
    chosen = next((v for _, v in agreeing if float(v.score) == score), None)  # type: ignore[arg-type]
    if chosen is None:
        chosen = min((v for _, v in (agreeing or ok)), key=lambda v: abs(float(v.score) - score))  # type: ignore[arg-type]
    out = chosen.copy(score=score, passed=passed)
    if binary:
        said = "yes" if passed else "no"
    else:
        said = f"{score:g}, {'passes' if passed else 'fails'} (scores {', '.join(f'{s:g}' for s in scores)})"
    vote = f"{len(agreeing)} of {len(ok)} judges: {said}"
    if failed:
        vote += "; " + "; ".join(f"{n} did not answer ({v.error or v.status})" for n, v in failed)
    out.rationale = f"{vote}. {chosen.rationale}" if chosen.rationale else vote
    out.details = {**(chosen.details or {}), PANEL: {"members": members, "agreement": len(agreeing) / len(ok)}}
    out.usage = usage
    out.cached = cached
    out.raw = None
    return out


# each panel member's columns (``judge.panel``): M_panel_NAME_<suffix> -> type
PANEL_COLUMNS = {"score": "float64", "passed": "bool", "status": "string", "error": "string", "cost_usd": "float64"}


def tempered(call: Call, temperature: float | None, samples: int) -> Call:
    """``call`` at a panel member's own ``temperature`` (None: as the judge made it): raised to
    0.7 on a final call drawn several times (``samples``) at 0, as ``Judge.temperature`` does."""
    if temperature is None:
        return call
    wanted = 0.7 if samples > 1 and temperature == 0.0 and call.final else temperature
    return call if wanted == call.temperature else replace(call, temperature=wanted)


def panel_values(metric: str, names: list[str], column: list[Verdict]) -> dict[str, list[Any]]:
    """The panel's columns of ``metric`` for ``column`` (one verdict per row): ``M_panel_agreement``
    (the share of the members that answered agreeing with the panel's pass / fail) and per member
    ``M_panel_NAME_score``, ``_passed``, ``_status``, ``_error``, ``_cost_usd``; null on a row no
    member judged (skipped, or decided without a call)."""
    out: dict[str, list[Any]] = {f"{metric}_panel_agreement": []}
    for name in names:
        for suffix in PANEL_COLUMNS:
            out[f"{metric}_panel_{name}_{suffix}"] = []
    for verdict in column:
        found = {m["name"]: m for m in (members_of(verdict.details) or [])}
        shared = (verdict.details or {}).get(PANEL) if isinstance(verdict.details, dict) else None
        out[f"{metric}_panel_agreement"].append(shared.get("agreement") if isinstance(shared, dict) else None)
        for name in names:
            member = found.get(name) or {}
            for suffix in PANEL_COLUMNS:
                out[f"{metric}_panel_{name}_{suffix}"].append(member.get(suffix))
    return out
