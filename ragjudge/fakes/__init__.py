"""The test doubles: ``server``, the loopback fake OpenAI-compatible judge server (``python -m
ragjudge.fakeserver``), with its batch APIs (``batches``) and decision-model APIs (``decisions``)
as mixins of its class. Never a judge: their verdicts are not quality figures. The in-process
fake (``ragjudge.transports.fake``) answers by the same rule (``ragjudge.transports.fake_rule``).
Importing this package imports none of them."""
