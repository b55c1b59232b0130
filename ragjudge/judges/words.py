"""Word rules shared by the judges' checks after the cache: content words (language-aware stop
words, NFKC, case folding, light plural folding), the share of a text's content words found in
other texts, and a fuzzy test that a quote occurs in passages.

Used by grounded sufficiency's evidence check (``sufficiency.fact_evidence``), reference-free
sufficiency's quote check (``sufficiency.quote_check``) and request check
(``sufficiency.request_evidence``) and completeness's statement evidence
check (``completeness.statement_evidence``, ``completeness.evidence_weight``). Pure functions
of text: no model call, so a check built on them changes no cache key.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher
from functools import lru_cache

# scripts written without spaces between words: each character counts as a word
_UNSPACED = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_WORD_RE = re.compile(f"[{_UNSPACED}]|[^\\W_{_UNSPACED}]+", re.UNICODE)
NO_QUOTE = frozenset({"", "none", "null", "n a", "na", "nothing"})  # a quote, its words joined by spaces, that quotes nothing


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of ``text``'s language (py3langid, a fork of langid.py), None for text
    with no letters."""
    if not any(ch.isalpha() for ch in text):
        return None
    import py3langid

    return py3langid.classify(text[:4000])[0]


@lru_cache(maxsize=64)
def stop_words(language: str | None) -> frozenset[str]:
    """The stop words of ``language`` (ISO 639-1) from the ``stopwords`` package (Snowball-style
    lists, 42 languages), case-folded; empty for a language it has no list for."""
    if language is None:
        return frozenset()
    import stopwords

    try:
        return frozenset(word.casefold() for word in stopwords.get_stopwords(language))
    except stopwords.LanguageNotAvailable:
        return frozenset()


def words(text: str) -> list[str]:
    """``text``'s words, NFKC-normalised and case-folded, punctuation dropped; in Chinese,
    Japanese, Korean and Thai each character is a word."""
    return _WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold())


def content_words(text: str, stop: frozenset[str]) -> list[str]:
    """``words(text)`` less the words in ``stop``, plurals folded ("engines" -> "engine")."""
    found = []
    for word in words(text):
        if word in stop:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]  # light plural folding, on both sides: "engines" matches "engine"
        found.append(word)
    return found


def evidence_share(fact: str, passages: list[str]) -> float:
    """Share (0..1) of ``fact``'s content words that occur anywhere in ``passages``; 1.0 for a
    fact with no content words. Words are NFKC-normalised and case-folded, plurals folded; in
    Chinese, Japanese, Korean and Thai each character is a word. Stop words are dropped in the
    language detected for the fact and the passages (``detect_language``, ``stop_words``), so
    every language with a list is treated alike; for a language without one, every word
    counts, which makes the check more lenient there (a fact's function words count as
    evidence).

    The grounded judge's evidence check (``sufficiency.fact_evidence``: a fact most of whose
    words appear nowhere in the context cannot be stated by it, whatever the judge says) and
    completeness's statement evidence check (``completeness.statement_evidence``, the response
    in place of the passages). Either can only turn "supported" / "covered" into its opposite,
    never the reverse."""
    return _evidence_share(fact, tuple(passages))


@lru_cache(maxsize=4096)  # cross-validation decides each row under many settings: read each row once
def _evidence_share(fact: str, passages: tuple[str, ...]) -> float:
    return evidence_shares([fact], list(passages))[0]


def evidence_shares(facts: list[str], passages: list[str]) -> list[float]:
    """``evidence_share`` for each of ``facts``, reading the passages once."""
    joined = " ".join(passages)
    stop = stop_words(detect_language(" ".join(facts) + " " + joined[:3000]))
    present = set(content_words(joined, stop))
    shares = []
    for fact in facts:
        found = content_words(fact, stop)
        shares.append(sum(1 for word in found if word in present) / len(found) if found else 1.0)
    return shares


def quotes_nothing(quote: str | None) -> bool:
    """Whether a judge's ``quote`` quotes no text: None, empty, or NONE / null / N/A (any case,
    any punctuation around it)."""
    return quote is None or " ".join(words(quote)) in NO_QUOTE


def quote_match(quote: str, passages: list[str]) -> float:
    """How well (0..1) ``quote`` occurs in ``passages`` (their words in order, one after the
    other): 1.0 when its words occur there in order, word for word; else the best difflib
    ``SequenceMatcher`` ratio (2 x matching words / total words) between the quote's words and
    a stretch of the passages' words as long as the quote, aligned on each block of matching
    words (the partial ratio of fuzzywuzzy and rapidfuzz, at word level); a quote longer than
    all the passages is compared with all of them. Words as ``words``: case, Unicode forms and
    punctuation do not count, so a quote that differs in quotation marks or case still scores
    1.0, and one word changed in twenty scores 0.95. 0.0 for a quote (or passages) with no
    words.

    The reference-free judge's quote check (``sufficiency.quote_check``)."""
    return _quote_match(quote, tuple(passages))


@lru_cache(maxsize=4096)  # cross-validation decides each row under many settings: match each quote once
def _quote_match(quote: str, passages: tuple[str, ...]) -> float:
    said = words(quote)
    text = [word for passage in passages for word in words(passage)]  # in order: a quote may run on into the next passage
    if not said or not text:
        return 0.0
    if " " + " ".join(said) + " " in " " + " ".join(text) + " ":
        return 1.0
    return _partial_ratio(said, text)


def _partial_ratio(short: list[str], long: list[str]) -> float:
    if len(short) >= len(long):
        return SequenceMatcher(None, short, long, autojunk=False).ratio()
    best = 0.0
    matcher = SequenceMatcher(None, short, long, autojunk=False)
    for i, j, size in matcher.get_matching_blocks():
        if not size:
            continue
        start = max(0, min(j - i, len(long) - len(short)))
        window = long[start:start + len(short)]
        best = max(best, SequenceMatcher(None, short, window, autojunk=False).ratio())
    return best
