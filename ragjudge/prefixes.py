"""The counts the summary keeps of ``sufficient_k`` (issue 63): how many ranked passages the rows
needed before their context was sufficient, and what a top-k would save.

Plain values and arithmetic, below every other layer, added up over chunks (and Ray's blocks) as
the rest of ``ragjudge.gate.Summary`` is. A verdict brings its row's figures in
``details["prefixes"]`` (``ragjudge.judges.sufficient_k``): the smallest sufficient k (None: never
sufficient), the passages retrieved (n), whether the row was monotone in k, and its passages'
tokens (UTF-8 bytes / 4 each, in retrieved order; None where they are not known: a row read back
from a scored table whose context column is not there, ``ragjudge.counting.prefix_figures``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

# A token, counted without the model's tokenizer (a judge does not know the model): about 4.3
# UTF-8 bytes of English prose with Qwen2.5's and OpenAI's tokenizers, 3 to 4 in scripts of 3-byte
# characters; 4 bytes a token leans to more tokens for both (``ragjudge.judges.base.BYTES_PER_TOKEN``)
BYTES_PER_TOKEN = 4
SHARE = 0.9  # the share of rows the summary's sentence is about: "90% of rows are sufficient by k = 3"
MAX_K = 100  # tokens saved are kept for a top-k of 1..MAX_K passages


@dataclass
class PrefixCounts:
    """``rows``: ok rows counted; ``by_k``: rows per smallest sufficient k; ``never``: rows no
    prefix of which was sufficient; ``not_monotone``: rows flagged not monotone; ``by_n``: rows
    per number of passages retrieved; ``tokens``: the tokens of every row's passages;
    ``saved_at``: per top-k (1..``MAX_K``), the tokens of the passages after the first k, summed
    over rows (what a retriever returning k passages would not send); ``sized``: the rows whose
    passages' tokens are known (every row of a run; a table read back may lack its context), the
    rows ``tokens`` and ``saved_at`` are over."""

    rows: int = 0
    by_k: dict[int, int] = field(default_factory=dict)
    never: int = 0
    not_monotone: int = 0
    by_n: dict[int, int] = field(default_factory=dict)
    tokens: int = 0
    saved_at: dict[int, int] = field(default_factory=dict)
    sized: int = 0

    def add(self, figures: dict[str, Any]) -> None:
        """Count one ok row's ``figures`` (``k``, ``n``, ``monotone``, ``passage_tokens``)."""
        self.rows += 1
        k = figures.get("k")
        if k is None:
            self.never += 1
        else:
            self.by_k[int(k)] = self.by_k.get(int(k), 0) + 1
        self.not_monotone += figures.get("monotone") is False
        n = int(figures.get("n") or 0)
        self.by_n[n] = self.by_n.get(n, 0) + 1
        given = figures.get("passage_tokens")
        if given is None:  # tokens not known (a table read back without its context): counted in k, never, n only
            return
        self.sized += 1
        tokens = [int(t) for t in given]
        self.tokens += sum(tokens)
        tail = sum(tokens)
        for top, size in enumerate(tokens[:MAX_K], start=1):
            tail -= size
            if tail:
                self.saved_at[top] = self.saved_at.get(top, 0) + tail

    def merge(self, other: "PrefixCounts | None") -> "PrefixCounts":
        if other is None:
            return self
        def add(a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
            return {key: a.get(key, 0) + b.get(key, 0) for key in sorted({*a, *b})}
        return PrefixCounts(self.rows + other.rows, add(self.by_k, other.by_k), self.never + other.never,
                            self.not_monotone + other.not_monotone, add(self.by_n, other.by_n), self.tokens + other.tokens,
                            add(self.saved_at, other.saved_at), self.sized + other.sized)

    def sufficient_by(self, k: int) -> float:
        """The share of the counted rows (0..1) sufficient with their first ``k`` passages."""
        return sum(count for at, count in self.by_k.items() if at <= k) / self.rows if self.rows else 0.0

    def k_for(self, share: float = SHARE) -> int | None:
        """The least k by which at least ``share`` of the counted rows are sufficient; None when
        that many rows are never sufficient."""
        for k in sorted(self.by_k):
            if self.sufficient_by(k) >= share - 1e-12:
                return k
        return None

    def to_dict(self) -> dict[str, Any]:
        """The summary JSON's ``sufficient_k``: rows, the rows per k and the cumulative share
        sufficient by each k, never and not-monotone rows, rows per passages retrieved, and the
        k for 90% of rows with the tokens a top-k of that size saves (total and per row)."""
        k90 = self.k_for()
        return {
            "rows": self.rows,
            "by_k": {str(k): count for k, count in sorted(self.by_k.items())},
            "sufficient_by": {str(k): round(self.sufficient_by(k), 4) for k in sorted(self.by_k)},
            "never": self.never,
            "never_share": round(self.never / self.rows, 4) if self.rows else None,
            "not_monotone": self.not_monotone,
            "passages": {str(n): count for n, count in sorted(self.by_n.items())},
            "k_for_90": k90,
            "tokens": self.tokens,
            "tokens_saved_at_k_for_90": self.saved_at.get(k90, 0) if k90 is not None else None,
        }

    def lines(self, metric: str) -> list[str]:
        """The sentences the terminal, the Markdown summary and the report print: "sufficient_k:
        90% of 20 rows are sufficient by k = 3 (k=1 0.40, k<=2 0.70, k<=3 0.90); the retriever
        returned 10 passages (most rows); a top-3 would save 812 of 1,510 tokens a row (54%);
        never sufficient 2 rows (0.10); not monotone 1 row"."""
        if not self.rows:
            return []
        k90 = self.k_for()
        shares = ", ".join(f"k{'=' if k == min(self.by_k) else '<='}{k} {self.sufficient_by(k):.2f}" for k in sorted(self.by_k)[:8])
        n = max(self.by_n.items(), key=lambda item: (item[1], item[0]))[0] if self.by_n else 0
        if k90 is None:
            head = f"{metric}: fewer than {SHARE:.0%} of {self.rows} rows are sufficient with all their passages"
        else:
            saved = self.saved_at.get(k90, 0)
            head = f"{metric}: {SHARE:.0%} of {self.rows} rows are sufficient by k = {k90}; the retriever returned {n} passages (most rows)"
            if self.sized:  # per row of those whose passages' tokens are known
                over = f" (of the {self.sized} rows whose passages the table holds)" if self.sized < self.rows else ""
                head += (f"; a top-{k90} would save {saved / self.sized:,.0f} of {self.tokens / self.sized:,.0f} tokens a row"
                         + (f" ({saved / self.tokens:.0%})" if self.tokens else "") + over)
        tail = f" ({shares})" if shares else ""
        never = f"; never sufficient {self.never} row{'s' if self.never != 1 else ''} ({self.never / self.rows:.2f})"
        odd = f"; not monotone {self.not_monotone} row{'s' if self.not_monotone != 1 else ''}" if self.not_monotone else ""
        return [head + tail + never + odd]


def passage_tokens(texts: list[str]) -> list[int]:
    """Each passage's tokens, counted without a tokenizer: its UTF-8 bytes / ``BYTES_PER_TOKEN``, rounded up."""
    return [math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN) for text in texts]


__all__ = ["BYTES_PER_TOKEN", "PrefixCounts", "SHARE", "passage_tokens"]
