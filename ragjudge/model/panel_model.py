"""``PanelModel``: the members of a panel (``judge.panel``), one chokepoint each, seen by the run
as one model; their verdicts are combined by ``ragjudge.judges.panel_rule``."""

from __future__ import annotations

from typing import Any

from ragjudge.errors import ProviderFatalError
from ragjudge.model.chokepoint import Model
from ragjudge.model.decision import model_for
from ragjudge.model.retry import Ledger
from ragjudge.transports import resolve_model
from ragjudge.types import Call, Verdict


class PanelModel:
    """The members of a panel (``judge.panel``), one ``Model`` each, seen by the run as one
    model: the scorer asks each member (``members``) and combines their verdicts
    (``ragjudge.judges.panel_rule.decide``).

    Each member has its own chokepoint: its own cache keys (its model and API base), limit,
    probe, retries and fatal error; they share one budget (``judge.max_cost``, a ``Ledger``).
    ``fatal``: a ``ProviderFatalError`` only when fewer members than the quorum can still
    answer (a member's own fatal error leaves the rows to the others). ``transport``: as
    ``Model``'s, for every member, through its ``for_model`` (the test double,
    ``ragjudge.transports.fake.FakeTransport``, gives each member its own).
    """

    def __init__(self, settings: Any, cache: Any = None, transport: Any = None) -> None:
        self.settings = settings
        self.cache = cache
        self.quorum: int = settings.quorum
        self.ledger = Ledger()
        self.members: list[tuple[str, Model]] = []
        for member in settings.panel:
            own = settings.member(member)
            given = transport.for_model(resolve_model(own)) if transport is not None else None
            self.members.append((member.label, model_for(own, cache, given, self.ledger)))
        self.provider_model = "panel: " + ", ".join(model.provider_model for _, model in self.members)
        self.transport = self.members[0][1].transport

    @property
    def names(self) -> list[str]:
        """The members' names (columns ``M_panel_NAME_*``), in the panel's order."""
        return [name for name, _ in self.members]

    @property
    def fatal(self) -> ProviderFatalError | None:
        """The error that stops the whole panel: fewer members than the quorum are left without
        a fatal error of their own; None while the quorum holds."""
        stopped = [(name, model.fatal) for name, model in self.members if model.fatal is not None]
        if len(self.members) - len(stopped) >= self.quorum:
            return None
        return ProviderFatalError(f"the panel is below its quorum of {self.quorum}: "
                                  + "; ".join(f"{name}: {fatal}" for name, fatal in stopped))

    @fatal.setter
    def fatal(self, value: ProviderFatalError | None) -> None:  # another Ray actor's fatal error: no member calls
        for _, model in self.members:
            model.fatal = value

    @property
    def budget_reached(self) -> bool:
        return any(model.budget_reached for _, model in self.members)

    @property
    def spent(self) -> float:
        return self.ledger.spent

    @property
    def calls(self) -> int:
        return sum(model.calls for _, model in self.members)

    @property
    def retries(self) -> int:
        return sum(model.retries for _, model in self.members)

    @property
    def stopping(self) -> bool:
        return any(model.stopping for _, model in self.members)

    @property
    def on_wire(self) -> int:
        return sum(model.on_wire for _, model in self.members)

    def prefetch(self, calls: list[Call]) -> None:
        """Nothing: each member looks its calls up as it makes them."""

    def group(self, calls: list[Call]) -> None:
        """Each member groups a row's calls as its kind does (``Model.group``, ``DecisionModel.group``)."""
        for _, model in self.members:
            model.group(calls)

    def peek(self, call: Call, sample: int = 0, key: str | None = None) -> Verdict | None:
        """None: a panel's verdict is its members' (each member's ``call`` reads its own cache)."""
        return None

    def interrupt(self) -> None:
        """Stop starting calls on every member."""
        for _, model in self.members:
            model.interrupt()

    async def aclose(self) -> None:
        """Close every member (``Model.aclose``)."""
        for _, model in self.members:
            await model.aclose()
