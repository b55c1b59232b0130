"""How messages name a run's options: ``OptionError``, a refused option that carries the
request fields it is about and says them as its reader knows them, rendered once by whoever
tells the reader (``Names``: the command line's flags, ``CLI``, or a Python call's keyword
arguments, ``KEYWORDS``); and ``check_budget``, the check of ``judge.max_cost`` that the
``Scorer`` makes too."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

from ragjudge import prices
from ragjudge.errors import ConfigError, InputError, RagjudgeError
from ragjudge.transports import resolve_model

_CLI_NAMES = {"output": "-o", "row_events": "-v/--verbose", "max_cost": "--max-cost"}
_CONFIG_KEYS = {"max_cost": "judge.max_cost", "batch": "judge.batch", "max_rate": "gate.max_rate"}  # options a Python call gives in the config


@dataclass(frozen=True)
class Names:
    """How a message names a run's options (``ragjudge.run.ScoreRequest``'s fields): as the
    command line's flags (``CLI``: ``--limit``, ``--max-drop 2.0``, ``-o``) or, for a request
    made in Python (``evaluate``, ``ScoreRequest``, ``Scorer``), as its keyword arguments
    (``KEYWORDS``: ``limit=``, ``max_drop=2.0``, ``output=``; the budget is the config key
    ``judge.max_cost``, the batch API ``judge.batch``)."""

    keywords: bool = False

    def __call__(self, field: str) -> str:
        """``field`` named: ``--max-drop`` / ``max_drop=``."""
        if self.keywords:
            return _CONFIG_KEYS.get(field, f"{field}=")
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

    def pick(self, flags: str, keywords: str) -> str:
        """The command line's text (``flags``) or a Python call's (``keywords``), where the two say it otherwise."""
        return keywords if self.keywords else flags


CLI = Names()
KEYWORDS = Names(keywords=True)


class OptionError(ConfigError):
    """A run's option refused (exit 2). ``fields``: the request fields it is about
    (``ragjudge.run.ScoreRequest``'s: ``("limit", "sample")``); ``message``: the text, made from
    ``Names`` (``lambda n: f"{n('limit')} and {n('sample')} ..."``), so that the options are
    named once, as its reader knows them: the command line renders them as its flags
    (``--max-drop 2.0``), a Python call (``evaluate``, ``ScoreRequest``) as its keyword
    arguments (``max_drop=2.0``). ``str(err)`` is the text rendered with ``names``: unset, the
    command line's flags (as the checks called alone say them); ``named`` sets it once (the first
    caller that knows the reader wins: ``ragjudge.run.run`` and ``ScoreRequest.check`` name them
    as the request says, the command line as flags)."""

    def __init__(self, fields: str | tuple[str, ...], message: Callable[[Names], str]) -> None:
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        self.message = message
        self.names: Names | None = None
        super().__init__(*self.fields)

    def __str__(self) -> str:
        return self.message(self.names or CLI)

    def named(self, names: Names) -> OptionError:
        """This error with its options named as ``names`` says, where no caller named them yet."""
        if self.names is None:
            self.names = names
        return self


class OptionInputError(OptionError, InputError):
    """An ``OptionError`` that is an ``InputError`` too: what an option names cannot be read
    (a baseline with a null id)."""


def said(call: Callable[[], Any]) -> str:
    """The message of the ``RagjudgeError`` that ``call`` raises (``""`` when it raises none): a
    lower module's message made with an option's name, rendered again for another reader."""
    try:
        call()
    except RagjudgeError as exc:
        return str(exc)
    return ""


def check_budget(settings: Any, names: Names | None = None) -> None:
    """Refuse ``judge.max_cost`` (``--max-cost``) for a model with no known price before
    anything is spent: spending could not be counted, so the budget could never trip. With a
    panel (``judge.panel``), every member's model needs a price (``judge.price`` prices them all);
    with a cascade (``judge.cascade``), every stage's (the budget covers them all). Raises
    ``OptionError`` (``max_cost``), named as ``names`` says where given."""
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
            model = judge.model
            error = OptionError("max_cost", lambda n, model=model: f"{n('max_cost')}: {model} has no price in litellm's price table, so spending "
                                "cannot be counted; give one in the config: judge.price: {input_per_mtok: ..., output_per_mtok: ...}")
            raise error.named(names) if names is not None else error


