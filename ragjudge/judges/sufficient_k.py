"""The smallest sufficient k: how many of the ranked passages a row needs before its context is
sufficient, by the sufficiency judge on prefixes of the passages, found by binary search.

A row of ``n`` passages is first judged whole: that call is the sufficiency metric's own call
(same prompt, settings, extension and cache key: ``SufficiencyJudge.prepare`` on the row), so a
run of both metrics, or a run after a sufficiency run, pays for it once. Then:

- whole context insufficient: no prefix is sufficient (``sufficient_k_never``); no other call
  (a shorter prefix is assumed insufficient when the whole is: it holds less);
- whole context sufficient: binary search over the prefixes ``1..n-1`` for the smallest k
  whose prefix (the first k passages, in retrieved order) is sufficient, at most
  ``ceil(log2(n))`` calls; every prefix shorter than the k found was judged, or lies below one
  judged insufficient, and every prefix from k on lies at or above one judged sufficient;
- the check (``sufficient_k.check``, on by default): one more call on the middle of the longest
  stretch of prefixes above k that the search assumed sufficient without asking; judged
  insufficient, the row is not monotone in k (``sufficient_k_monotone`` false: a longer prefix
  judged insufficient than a shorter one judged sufficient). The k found stands.

So a row makes at most ``ceil(log2(n)) + 1`` calls beyond the whole context's. Each prefix's
verdict is decided as the sufficiency metric decides (its thresholds and checks after the cache).
The judge's last call is the whole context's call again, which the chokepoint answers from the
run's memory (or the cache) without a provider call; its verdict's rationale is kept.

The row's score is 1.0 when its smallest sufficient k is at most ``sufficient_k.top_k`` (default
5), else 0.0; ``--min-pass-rate sufficient_k=0.9`` then gates "90% of rows are sufficient by
k = top_k". ``sufficient_k_tokens_saved`` is the tokens (UTF-8 bytes / 4, ``prefixes.BYTES_PER_TOKEN``)
of the passages after the first k: what a retriever returning k passages would not send.

Decision models (issue 61): each prefix call is a sufficiency call, so a decision model is asked
sufficiency's typed question(s) (``ragjudge.judges.questions.sufficiency_questions``: the row's
predicate, one per expected fact) about the request and that prefix's passages; the search reads
each prefix's P(yes) against ``sufficiency.yes_threshold`` as the sufficiency metric does. The
whole context's call has sufficiency's questions, state and cache key, so in a run of both
metrics it rides in the row's one request beside the others' questions and is paid once; each
shorter prefix is a request of its own (its state differs).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from pydantic import Field

from ragjudge.prefixes import passage_tokens
from ragjudge.strict import Strict
from ragjudge.judges.base import BINARY, OK, Call, Judge, Reply, Verdict
from ragjudge.judges.sufficiency import SufficiencyJudge

METRIC = "sufficient_k"
PROMPT_VERSION = "sufficient_k-2026-12-07.1"  # the search's own rules; the calls are sufficiency's, under its version
SEARCH, FINAL = "search", "final"


class SufficientKSettings(Strict):
    """sufficient_k's own settings, the config's section ``sufficient_k:``; each field's
    description is its documentation (``docs/configuration.md``). The prefixes are judged with
    the section ``sufficiency:`` and ``extend.sufficiency``, as the sufficiency metric judges."""

    top_k: int = Field(5, ge=1, description="a row passes when its smallest sufficient prefix is at most this many passages (the "
                                            "retriever's top-k the gate holds it to); a row never sufficient fails")
    check: bool = Field(True, description="one more call per row, on the middle of the longest stretch of prefixes above the k found "
                                          "that the search assumed sufficient; judged insufficient, the row is flagged not monotone")


class SufficientKJudge(Judge):
    """The smallest sufficient prefix of the ranked passages (see the module docstring).

    Score 1.0 when sufficient by ``sufficient_k.top_k`` passages, else 0.0. Its own columns:
    ``sufficient_k_k`` (the smallest sufficient k; null when no prefix is), ``sufficient_k_passages``
    (n), ``sufficient_k_never`` (no prefix sufficient, the whole context included),
    ``sufficient_k_monotone`` (false when a longer prefix was judged insufficient after a shorter
    one was judged sufficient), ``sufficient_k_tokens_saved`` (tokens of the passages after the k
    found) and ``sufficient_k_probes`` (each prefix judged, in order: ``"10:yes 5:no 7:yes 6:yes"``).
    """

    name = METRIC
    version = PROMPT_VERSION
    kind = BINARY
    scale = (0.0, 1.0)
    default_threshold = 0.5
    needs = ("request", "context")
    inputs = ("request", "context", "passages", "expected_facts", "expected_response")
    description = "the smallest number of the ranked passages whose context is sufficient (binary search with the sufficiency judge)"
    Settings = SufficientKSettings
    shares = ("sufficiency",)  # make_judges gives this judge the sufficiency section, extension and threshold

    def __init__(self, settings: Any, threshold: float | None = None, extension: Any = None, options: Any = None,
                 shared: dict[str, tuple[Any, Any, float | None]] | None = None) -> None:
        super().__init__(settings, threshold, extension, options)
        own_extension, own_options, own_threshold = (shared or {}).get("sufficiency", (None, None, None))
        self.sufficiency = SufficiencyJudge(settings, own_threshold, extension=own_extension, options=own_options)

    def asks_questions(self) -> bool:
        """True: each probe is a sufficiency call carrying sufficiency's typed questions, which a
        decision model answers (see the module docstring)."""
        return self.sufficiency.asks_questions()

    def prepare(self, record: Any) -> Call | Verdict:
        """The whole context's sufficiency call (not final: the search follows), or a verdict
        without a call as sufficiency gives one (error, skipped; an empty retrieval: never
        sufficient)."""
        if getattr(record, "rank_error", None) and not record.context_error:  # an empty item: k would miscount positions
            return Verdict.failed(METRIC, record.rank_error, input_error=True)
        first = self.sufficiency.prepare(record)
        if isinstance(first, Verdict):
            if first.status == OK:  # an empty retrieval: nothing is sufficient
                return Verdict(metric=METRIC, status=OK, score=0.0, passed=self.passes(0.0), rationale=first.rationale, mode=first.mode,
                               details={"k": None, "n": 0, "never": True, "monotone": True, "probes": [], "saved": 0,
                                        "prefixes": {"k": None, "n": 0, "monotone": True, "passage_tokens": []}})
            return first.copy(metric=METRIC)
        n = len(record.passages)
        return self._probe(first, record, n, {"n": n, "lo": 0, "hi": n, "probes": [], "stage": SEARCH})

    def _probe(self, call: Call, record: Any, k: int, state: dict[str, Any], final: bool = False) -> Call:
        """``call`` (sufficiency's, on the first ``k`` passages) carrying the search's state."""
        data = {**call.data, "sufficient_k": {**state, "k": k, "record": record}}
        return replace(call, final=final, data=data)

    def follow_up(self, call: Call, verdict: Verdict) -> Call:
        """The next prefix to judge after the ok sufficiency ``verdict`` of ``call``: the search's
        next midpoint, the check, or (the search done) the whole context's call again, final."""
        return self._step(call, bool(self.sufficiency.decide(verdict.copy(), call).passed))

    def unanswered(self, call: Call) -> list[Call]:
        """The calls the dry run counts after the non-final ``call``, whose reply it cannot know
        (``ragjudge.run.estimate``): the rest of the search with every prefix judged sufficient (the
        path of a row whose first passage suffices: ``ceil(log2(n))`` calls and the check), the
        final repeat of the whole context's call left out (the chokepoint answers it from memory)."""
        calls = []
        call = self._step(call, True)
        while not call.final:
            calls.append(call)
            call = self._step(call, True)
        return calls

    def _step(self, call: Call, ok: bool) -> Call:
        """The call after ``call``'s prefix was judged sufficient (``ok``) or not."""
        state = dict(call.data["sufficient_k"])
        record, k, n = state["record"], state["k"], state["n"]
        state["probes"] = [*state["probes"], (k, ok)]
        if state["stage"] == SEARCH:
            if k == n and not ok:
                return self._finish(state, record)
            if ok:
                state["hi"] = k
            else:
                state["lo"] = k
            if state["hi"] - state["lo"] > 1:
                return self._at((state["lo"] + state["hi"]) // 2, state, record)
            check = self._check_at(state) if self.options.check else None
            if check is not None:
                state["stage"] = "check"
                return self._at(check, state, record)
        return self._finish(state, record)

    def _at(self, k: int, state: dict[str, Any], record: Any) -> Call:
        prefix = replace(record, passages=list(record.passages[:k]))
        made = self.sufficiency.prepare(prefix)
        assert isinstance(made, Call), "a prefix of a context that makes a call makes one"
        return self._probe(made, record, k, state)

    def _finish(self, state: dict[str, Any], record: Any) -> Call:
        """The whole context's call again, final: the chokepoint answers it from memory."""
        whole = self.sufficiency.prepare(record)
        assert isinstance(whole, Call)
        return self._probe(whole, record, state["n"], {**state, "stage": FINAL}, final=True)

    @staticmethod
    def _check_at(state: dict[str, Any]) -> int | None:
        """The middle of the longest run of prefixes above the k found (``hi``) not judged, the
        search having assumed them sufficient; None when every one was judged."""
        judged = sorted({k for k, _ in state["probes"]} | {state["hi"]})
        best: tuple[int, int] | None = None
        for low, high in zip(judged, judged[1:]):
            if low >= state["hi"] and high - low > 1 and (best is None or high - low > best[1] - best[0]):
                best = (low, high)
        return None if best is None else (best[0] + best[1]) // 2

    def parse(self, reply: Reply, call: Call) -> Verdict:
        """Sufficiency's reading of the reply (the cache holds the same verdict whichever metric made the call)."""
        return self.sufficiency.parse(reply, call)

    def decide(self, verdict: Verdict, call: Call) -> Verdict:
        """The row's verdict from the search's probes (carried in ``call.data``) and the whole
        context's ``verdict`` (its rationale kept): k, never, monotone, tokens saved, then the
        score against ``sufficient_k.top_k``."""
        if verdict.status != OK:
            return verdict.copy(metric=METRIC)
        state = call.data.get("sufficient_k") or {}
        record = state.get("record")
        n = state.get("n", 0)
        probes = list(state.get("probes") or [])
        whole = self.sufficiency.decide(verdict.copy(), call)
        if not probes:  # a chain made without the search (not expected): the whole context alone
            probes = [(n, bool(whole.passed))]
        sufficient = [k for k, ok in probes if ok]
        k = min(sufficient) if sufficient else None
        monotone = not any(ok_short and not ok_long for short, ok_short in probes for long, ok_long in probes
                           if short < long) if sufficient else True
        never = k is None
        tokens = passage_tokens([p.text for p in record.passages]) if record is not None else []
        saved = sum(tokens[k:]) if k is not None else 0
        score = 1.0 if k is not None and k <= self.options.top_k else 0.0
        said = ("no prefix is sufficient: the whole context is not" if never else
                f"sufficient by k = {k} of {n} passages" + ("" if monotone else "; not monotone: a longer prefix was judged insufficient"))
        out = Verdict(metric=METRIC, status=OK, score=score, rationale=f"{said}. {whole.rationale}" if whole.rationale else said,
                      mode=whole.mode, missing=list(whole.missing) if never else [],
                      details={"k": k, "n": n, "never": never, "monotone": monotone, "saved": saved,
                               "probes": [[a, b] for a, b in probes],
                               # what the summary counts (ragjudge.prefixes.PrefixCounts): the k distribution, tokens a top-k saves
                               "prefixes": {"k": k, "n": n, "monotone": monotone, "passage_tokens": tokens}})
        out.usage, out.cached, out.raw = verdict.usage, verdict.cached, verdict.raw
        return super().decide(out, call)

    def columns(self) -> dict[str, str]:
        return {"sufficient_k_k": "int64", "sufficient_k_passages": "int64", "sufficient_k_never": "bool", "sufficient_k_monotone": "bool",
                "sufficient_k_tokens_saved": "int64", "sufficient_k_probes": "string"}

    def values(self, verdict: Verdict) -> dict[str, Any]:
        if verdict.status != OK:
            return {}
        details = verdict.details or {}
        probes = details.get("probes") or []
        return {"sufficient_k_k": details.get("k"), "sufficient_k_passages": details.get("n"), "sufficient_k_never": details.get("never"),
                "sufficient_k_monotone": details.get("monotone"), "sufficient_k_tokens_saved": details.get("saved"),
                "sufficient_k_probes": " ".join(f"{k}:{'yes' if ok else 'no'}" for k, ok in probes) or None}


def calls_at_most(n: int, check: bool = True) -> int:
    """The most sufficiency calls one row of ``n`` passages makes beyond the whole context's:
    ``ceil(log2(n))`` for the search, plus one for the check."""
    return (math.ceil(math.log2(n)) if n > 1 else 0) + (1 if check and n > 2 else 0)


__all__ = ["SufficientKJudge", "SufficientKSettings", "calls_at_most"]
