"""The fake judge's rule, shared by the loopback server (``ragjudge.fakeserver``) and the
in-process transport (``ragjudge.transports.fake``): a crude, visible word-overlap verdict
(``heuristic_reply``) and the token log-probabilities it would come with (``fake_logprobs``).
A test double, never a judge: its verdicts are not quality figures."""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[a-z0-9]+")
_STOP = set("the a an of to in on and or is are was were be by for with as at from that this which who what when where how why does did do it its".split())


def _section(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.S)
    return match.group(1) if match else ""


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def _items(block: str) -> list[str]:
    return [re.sub(r"^\[\d+\]\s*", "", line) for line in block.splitlines() if line.strip()]


LENIENT, STRICT = "lenient", "strict"


def leaning(model: str) -> tuple[float, float]:
    """The overlap shares the fake judge ``model`` asks for: (a fact or request supported in a
    passage, a statement covered by the response). A model whose name holds ``lenient`` is
    yes-biased (0.3, 0.25), one whose name holds ``strict`` is strict (1.0, 0.9), any other
    (0.6, 0.5): so that a panel of fake judges disagrees on real rows (``ragjudge.panel``)."""
    name = model.rsplit("/", 1)[-1].lower()
    if LENIENT in name:
        return 0.3, 0.25
    if STRICT in name:
        return 1.0, 0.9
    return 0.6, 0.5


def fault_of(faults: dict[str, tuple[int, list[str]]], model: str, answered: int) -> str | None:
    """The fault the fake judge ``model`` meets on a call after ``answered`` calls of it
    (``faults``: model name, with or without its provider, -> (calls answered first, faults in
    turn, the last repeated): ``"401"`` or ``"timeout"``); None: answer it."""
    plan = faults.get(model) or faults.get(model.rsplit("/", 1)[-1])
    if plan is None or answered < plan[0]:
        return None
    kinds = plan[1]
    return kinds[min(answered - plan[0], len(kinds) - 1)] if kinds else None


# the abstention rule's declining phrases (the fake judge's, not a quality figure)
DECLINES = re.compile(r"\b(i do not know|i don't know|i cannot (?:answer|tell|say)|i can't (?:answer|tell|say)|not (?:stated|mentioned|given) in|"
                      r"no information|unable to answer|cannot be answered|could you (?:give|provide))", re.IGNORECASE)


def heuristic_reply(messages: list[dict[str, Any]], schema_name: str | None, schema: dict[str, Any] | None = None,
                    model: str = "") -> dict[str, Any]:
    """A deterministic judge reply by word overlap: a fact is supported when >= 60% of its
    content words occur in one passage; the ground truth's statements are its sentences (at
    most 8 when the prompt asks for at most 8); a statement is covered when >= 50% of its content words occur in the response,
    and completeness is 1 + 4 x (covered share), rounded; abstention is yes when the response holds one
    of ``DECLINES``' phrases. A judge defined in YAML
    (``judge_NAME``, its ``schema`` given) is answered from the response's sentences found in
    the passages: each is a claim, supported as a fact is; the verdict is yes when all are; a
    scale's score is its lowest plus the supported share of its range, rounded; a judge per passage
    (its schema's ``passages``) marks each passage as passage_relevance's rule does. Passage relevance
    (``passage_relevance``): a passage is relevant when it holds the request's share of content
    words a fact needs to be supported. Pairwise (``pairwise``): ``pairwise_reply``. ``model``: the
    judge model asked; its name sets the shares (``leaning``: lenient, strict)."""
    fact_share, statement_share = leaning(model)
    user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    if isinstance(user, list):
        user = " ".join(part.get("text", "") for part in user if isinstance(part, dict))
    if schema_name and schema_name.startswith("judge_"):
        return _custom_reply(user, (schema or {}).get("properties") or {}, fact_share)
    if schema_name == "pairwise":
        return pairwise_reply(user, model)
    if schema_name == "abstention":  # declined when the response says so in one of a few common phrases
        declined = bool(DECLINES.search(_section(user, "response")))
        return {"verdict": "yes" if declined else "no", "rationale": "A declining phrase." if declined else "No declining phrase."}
    if "<request>" not in user and "<ground_truth>" not in user and "<statements>" not in user:
        # not one of ragjudge's prompts (e.g. another tool's judge in a side-by-side
        # benchmark): a generic yes/no reply in the common {"rationale", "result"} shape
        return {"rationale": "Generic reply from the fake judge server.", "result": "yes"}
    if schema_name == "passage_relevance":  # a passage is relevant when it holds the request's words as a fact's supporting passage does
        request = _words(_section(user, "request"))
        marks = []
        for number, passage in enumerate(_items(_section(user, "context")), start=1):
            share = len(request & _words(passage)) / len(request) if request else 0.0
            marks.append({"passage": number, "relevant": share >= fact_share, "reason": f"{share:.0%} of the request's words"})
        return {"passages": marks}
    if schema_name is None:
        schema_name = "completeness_statements" if "<ground_truth>" in user else "completeness" if "<statements>" in user else (
            "sufficiency_grounded" if "<expected_facts>" in user else "sufficiency_reference_free")
    if schema_name == "completeness_statements":  # each sentence of the ground truth, at most 8
        sentences = [part.strip() for part in re.split(r"(?<=[.!?])\s+", _section(user, "ground_truth")) if part.strip()]
        return {"statements": sentences if "every key statement" in user else sentences[:8]}  # the prompt's own limit
    if schema_name == "completeness":
        response = _words(_section(user, "response"))
        flags = []
        for number, statement in enumerate(_items(_section(user, "statements")), start=1):
            words = _words(statement)
            flags.append({"statement": number, "covered": bool(words) and len(words & response) / len(words) >= statement_share})
        share = sum(f["covered"] for f in flags) / len(flags) if flags else 0.0
        return {"statements": flags,
                "rationale": f"{share:.0%} of the ground truth's statements appear in the response.",
                "score": 1 + round(4 * share)}
    passages = [_words(p) for p in _items(_section(user, "context"))]

    def supported(text: str) -> tuple[bool, list[int]]:
        words = _words(text)
        hits = [i + 1 for i, p in enumerate(passages) if words and len(words & p) / len(words) >= fact_share]
        return bool(hits), hits

    if schema_name == "sufficiency_grounded":
        facts = []
        for number, fact in enumerate(_items(_section(user, "expected_facts")), start=1):
            ok, hits = supported(fact)
            facts.append({"fact": number, "reason": "word overlap", "supported": ok, "passages": hits})
        verdict = "yes" if facts and all(f["supported"] for f in facts) else "no"
        return {"facts": facts, "rationale": "Checked each fact's words against the passages.", "verdict": verdict}
    ok, hits = supported(_section(user, "request"))
    return {"needed": "the answer", "quote": "passage %s" % hits[0] if ok else "NONE",
            "rationale": "The request's words appear together in a passage." if ok else "No passage covers the request.",
            "verdict": "yes" if ok else "no"}


def fake_logprobs(content: str, p_yes: float = 0.8, p_true: float = 0.9, p_scores: dict[int, float] | None = None) -> dict[str, Any]:
    """Token log-probabilities for ``content``: every token certain, except the verdict
    value, where "yes" gets probability ``p_yes`` and "no" the rest (``p_true`` likewise for
    each "supported", "covered" and "relevant"), and the completeness score, spread as ``p_scores`` when set."""
    import math

    tokens: list[dict[str, Any]] = []
    for piece in re.findall(r"\w+|\s+|[^\w\s]", content):
        entry = {"token": piece, "logprob": 0.0, "top_logprobs": [{"token": piece, "logprob": 0.0}]}
        before = "".join(t["token"] for t in tokens).replace(" ", "")
        for words, key, p in ((("yes", "no"), '"verdict":"', p_yes), (("true", "false"), '"supported":', p_true),
                              (("true", "false"), '"covered":', p_true),
                              (("true", "false"), '"relevant":', p_true)):
            if piece in words and before.endswith(key):
                entry["top_logprobs"] = [{"token": words[0], "logprob": math.log(p)}, {"token": words[1], "logprob": math.log(1 - p)}]
                entry["logprob"] = entry["top_logprobs"][0 if piece == words[0] else 1]["logprob"]
        if p_scores and piece.isdigit() and before.endswith('"score":'):
            entry["top_logprobs"] = [{"token": str(k), "logprob": math.log(p)} for k, p in p_scores.items()]
        tokens.append(entry)
    return {"content": tokens}


def _custom_reply(user: str, properties: dict[str, Any], fact_share: float = 0.6) -> dict[str, Any]:
    if "passages" in properties:  # a judge per passage (per: passage): a verdict a passage, as passage_relevance's rule marks them
        request = _words(_section(user, "request")) or _words(user.split("<context>")[0])
        marks = []
        for number, passage in enumerate(_items(_section(user, "context")), start=1):
            share = len(request & _words(passage)) / len(request) if request else 0.0
            marks.append({"passage": number, "verdict": "yes" if share >= fact_share else "no", "reason": f"{share:.0%} of the request's words"})
        return {"passages": marks}
    passages = [_words(p) for p in _items(_section(user, "context"))]
    claims = [part.strip() for part in re.split(r"(?<=[.!?])\s+", _section(user, "response")) if part.strip() and part.strip() != "(none)"]
    flags = []
    for claim in claims:
        words = _words(claim)
        flags.append(bool(words) and any(len(words & p) / len(words) >= 0.6 for p in passages))
    share = sum(flags) / len(flags) if flags else 0.0
    reply: dict[str, Any] = {}
    if "claims" in properties:
        reply["claims"] = [{"claim": claim, "reason": "word overlap", "supported": flag} for claim, flag in zip(claims, flags)]
    reply["rationale"] = f"{share:.0%} of the response's sentences appear in the passages."
    if "score" in properties:
        allowed = properties["score"].get("enum") or [1, 5]
        low, high = min(allowed), max(allowed)
        reply["score"] = low + round((high - low) * share)
    else:
        reply["verdict"] = "yes" if flags and all(flags) else "no"
    return reply


def _shown(user: str, label: str) -> str:
    """Response ``label`` (A or B) of a pairwise prompt: the built-in's ``<response id="A">``, else
    (a YAML judge's prompt) the first or second ``<response>`` block."""
    match = re.search(rf'<response id="{label}">\n(.*?)\n</response>', user, re.S)
    if match:
        return match.group(1)
    blocks = re.findall(r"<response>\n(.*?)\n</response>", user, re.S)
    position = 0 if label == "A" else 1
    return blocks[position] if len(blocks) > position else ""


def pairwise_reply(user: str, model: str = "") -> dict[str, Any]:
    """The pairwise judge's verdict (``{"verdict": "A"|"B"|"tie", "reason"}``) by a rule the model's
    name picks: ``first`` in it, always the response shown first (a judge led by position); ``longer``,
    the longer response (by characters; a tie when equal); otherwise the response holding the larger
    share of the ground truth's content words (a tie within 0.05)."""
    name = model.rsplit("/", 1)[-1].lower()
    a, b = _shown(user, "A"), _shown(user, "B")
    if "first" in name:
        return {"verdict": "A", "reason": "The first response shown."}
    if "longer" in name:
        verdict = "tie" if len(a) == len(b) else "A" if len(a) > len(b) else "B"
        return {"verdict": verdict, "reason": f"Lengths {len(a)} and {len(b)} characters."}
    truth = _words(_section(user, "ground_truth") or _section(user, "expected_facts") or _section(user, "expected_response"))
    share_a = len(truth & _words(a)) / len(truth) if truth else 0.0
    share_b = len(truth & _words(b)) / len(truth) if truth else 0.0
    verdict = "tie" if abs(share_a - share_b) < 0.05 else "A" if share_a > share_b else "B"
    return {"verdict": verdict, "reason": f"{share_a:.0%} and {share_b:.0%} of the ground truth's words."}
