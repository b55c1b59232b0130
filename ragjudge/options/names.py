"""How messages name a run's options (``Names``: the command line's flags, ``CLI``, or a Python
call's keyword arguments, ``KEYWORDS``), and ``check_budget``, the check of ``judge.max_cost``
that the ``Scorer`` makes too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragjudge import prices
from ragjudge.errors import ConfigError
from ragjudge.transports import resolve_model

_CLI_NAMES = {"output": "-o", "row_events": "-v/--verbose", "max_cost": "--max-cost"}


@dataclass(frozen=True)
class Names:
    """How a message names a run's options (``ragjudge.run.ScoreRequest``'s fields): as the
    command line's flags (``CLI``: ``--limit``, ``--max-drop 2.0``, ``-o``) or, for a request
    made in Python (``evaluate``, ``ScoreRequest``, ``Scorer``), as its keyword arguments
    (``KEYWORDS``: ``limit=``, ``max_drop=2.0``, ``output=``; the budget is the config key
    ``judge.max_cost``)."""

    keywords: bool = False

    def __call__(self, field: str) -> str:
        """``field`` named: ``--max-drop`` / ``max_drop=``."""
        if self.keywords:
            return "judge.max_cost" if field == "max_cost" else f"{field}="
        return _CLI_NAMES.get(field, "--" + field.replace("_", "-"))

    def given(self, field: str, value: Any) -> str:
        """``field`` with its ``value``: ``--max-drop 2.0`` / ``max_drop=2.0`` (``format='csv'``)."""
        return f"{field}={value!r}" if self.keywords else f"{self(field)} {value}"

    def placeholder(self, field: str, text: str) -> str:
        """``field`` with a value to fill in: ``--sample N`` / ``sample=N``."""
        return f"{field}={text}" if self.keywords else f"{self(field)} {text}"

    def flag_on(self, field: str) -> str:
        """A flag that takes no value, set: ``--mlflow-log-feedback`` / ``mlflow_log_feedback=True``."""
        return f"{field}=True" if self.keywords else self(field)

    def about(self, field: str, value: Any) -> str:
        """A message's subject: the flag alone (``--junit``; the message says the value) / the
        keyword with its value (``junit='-'``)."""
        return self.given(field, value) if self.keywords else self(field)


CLI = Names()
KEYWORDS = Names(keywords=True)


def check_budget(settings: Any, names: Names = CLI) -> None:
    """Refuse ``judge.max_cost`` (``--max-cost``) for a model with no known price before
    anything is spent: spending could not be counted, so the budget could never trip. With a
    panel (``judge.panel``), every member's model needs a price (``judge.price`` prices them all);
    with a cascade (``judge.cascade``), every stage's (the budget covers them all)."""
    if settings.judge.max_cost is None or settings.judge.price is not None:
        return

    judges = [settings.judge.member(member) for member in settings.judge.panel] or [settings.judge]
    if settings.judge.cascade:
        judges = [settings.judge.stage(stage) for stage in settings.judge.cascade if stage != "panel"] + (
            judges if "panel" in settings.judge.cascade else [])
    for judge in judges:
        if judge.model.startswith("local/"):
            continue
        provider, _, name = resolve_model(judge).partition("/")
        if (prices.entry(provider, name) or {}).get("input_cost_per_token") is None:
            raise ConfigError(f"{names('max_cost')}: {judge.model} has no price in litellm's price table, so spending cannot be "
                              "counted; give one in the config: judge.price: {input_per_mtok: ..., output_per_mtok: ...}")


