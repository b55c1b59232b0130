"""The config's layers (the file, ``--set``, the named options) and what their messages say:
the all-metrics key ``*`` where it means something and a clean refusal where it does not,
``--print-config`` read back by ``-c``, ``--set`` laid over ``--set`` as over the file, a bound
on a metric the run does not judge refused however it was set, the hint for such a metric, and
a bad value named where it came from."""

from __future__ import annotations

import pytest


# -- --print-config is a config -c reads back ------------------------------------------------------

@pytest.mark.parametrize("options, sets", [
    ({"max_error_rate": ["completeness=0.1", "0.05"]}, []),
    ({}, ["gate.max_error_rate={'*': 0.5}"]),
    ({}, ["gate.max_skip_rate={'*': 0.5, completeness: 0.2}", "gate.allow_unjudged=['*']"]),
])
def test_the_printed_config_with_the_all_metrics_key_reads_back_as_the_same_config(tmp_path, options, sets):
    # the key '*' was printed bare (`*: 0.05`), which YAML reads as an alias: -c refused the file ("found ':'")
    from ragjudge.configdoc import effective
    from ragjudge.options import load_layers

    loaded = load_layers(None, options, sets)
    printed = effective(loaded)
    assert "'*': " in printed and "\n    *:" not in printed
    saved = tmp_path / "effective.yaml"
    saved.write_text(printed)
    again = load_layers(str(saved), {})
    assert again.config.model_dump() == loaded.config.model_dump()
