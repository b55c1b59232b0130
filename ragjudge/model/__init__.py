"""The one chokepoint for judge-model calls. It knows no metric: a judge hands it a ``Call``
and a parser, and gets a ``Verdict`` back.

Every call goes through ``Model.call``, in this order:

1. **cache get**: the on-disk response cache (``ragjudge.cache``), then the replies this
   model already received in this process (the last ``MEMORY`` calls);
2. **de-duplication**: an identical call already in flight is awaited, not sent again (the
   row that made it pays; the others get it at no cost);
3. **the first-call probe**: a run's first uncached call goes alone, so a bad key costs one
   call; the others start once its first attempt has an answer or ``PROBE_GRACE_S`` (0.5 s)
   after it started, whichever comes first (an auth error comes back in the connection's
   set-up and one round trip; a judge's answer takes the model's time, which the others need
   not wait for; a grace the loop thread was held through, the probe perhaps unsent, starts
   again: ``probe.FirstCall``); a timeout is that row's problem; a refused connection or an auth,
   permission, not-found or quota error stops the run: ``fatal``. An error slower than the
   grace meets the calls already sent (at most ``judge.concurrency``, each refused at no
   charge); none is sent after it, and the rows never sent say "not run: ...";
4. **the concurrency limit**, one for the whole process per model and API base
   (``judge.concurrency``; the lowest asked for wins when several scorers share a model);
5. **pacing** (``judge.rpm``);
6. **retry** with exponential backoff and jitter (tenacity) on 429 (honouring
   ``Retry-After``, ``retry-after-ms`` and a "retry in Ns" in the message; a 429 that says the
   account's quota is spent, OpenAI's ``insufficient_quota``, is fatal), 5xx, timeouts and
   dropped connections; a 400 that rejects ``response_format`` is asked once more without it
   (the prompt spells out the JSON);
7. **the transport call** (``ragjudge.transports``);
8. **error classification** into row errors (returned as error verdicts, never raised) and
   fatal errors (``fatal`` set; later calls return "not run");
9. **cache set** (parsed, successful replies only).

Before the first step that sends, a prompt past the model's known input limit (litellm's
table, ``max_input_tokens``) is a row error ("prompt of N tokens exceeds MODEL's input limit
of M"; no call). A reply that cannot be parsed is asked for once more; a reply cut at
``max_tokens`` is an error row, and so is a reply whose only text is a reasoning model's
reasoning (raise ``judge.max_tokens``). ``Verdict.usage`` carries each row's tokens, cost
(USD, or unknown), calls (every HTTP request) and retries; a reply without ``usage`` has its
tokens estimated as the dry run counts them (``Usage.estimated``), priced, and counted by
``judge.max_cost``.

The package, by concern: ``chokepoint`` (``Model``: the steps above), ``limits`` (the
concurrency limit and the pacing), ``retry`` (backoff, the failures a request ends in, the
budget's ``Ledger``), ``probe`` (``FirstCall``: the first call alone), ``decision`` (``DecisionModel``: a row's metrics in one request;
``model_for``) and ``panel_model`` (``PanelModel``: a panel's members seen as one model).
"""

from __future__ import annotations

from ragjudge.model.chokepoint import MEMORY, REASK, Model
from ragjudge.model.decision import DecisionModel, model_for
from ragjudge.model.limits import CallLimit, Pacer
from ragjudge.model.panel_model import PanelModel
from ragjudge.model.probe import PROBE_GRACE_S, PROBE_LATE_S, FirstCall
from ragjudge.model.retry import BACKOFF_INITIAL_S, BACKOFF_MAX_S, BUDGET, CANCELLED, Ledger, asked_wait

__all__ = ["BACKOFF_INITIAL_S", "BACKOFF_MAX_S", "BUDGET", "CANCELLED", "MEMORY", "PROBE_GRACE_S", "PROBE_LATE_S",
           "REASK", "CallLimit", "DecisionModel", "FirstCall", "Ledger", "Model", "Pacer", "PanelModel", "asked_wait", "model_for"]
