"""A Python call's options of the wrong type are refused once, before any judging, naming the
keyword and what it takes (``ragjudge.run.checks.check_types``): ``evaluate(max_drop="abc")``
raised TypeError, ``output=123`` AttributeError, and ``limit=True`` or ``sample=True`` ran."""

from __future__ import annotations

import pytest

from conftest import write_jsonl
from helpers import TOWER_ROW as GOOD
from ragjudge.errors import ConfigError
from ragjudge.options import OptionError


@pytest.mark.parametrize(("fields", "message"), [
    ({"max_drop": "abc", "baseline": "b.parquet"}, "max_drop='abc': max_drop= takes a number 0..1, not str"),
    ({"alpha": "x"}, "alpha='x': alpha= takes a number 0..1, not str"),
    ({"limit": "3"}, "limit='3': limit= takes a whole number >= 1, not str"),
    ({"limit": 2.5}, "limit=2.5: limit= takes a whole number >= 1, not float"),
    ({"limit": True}, "limit=True: limit= takes a whole number >= 1, not bool"),
    ({"sample": True}, "sample=True: sample= takes a whole number >= 1, not bool"),
    ({"sample": 2, "seed": "x"}, "seed='x': seed= takes a whole number, not str"),
    ({"max_regressions": "1", "baseline": "b.parquet"}, "max_regressions='1': max_regressions= takes a whole number >= 0, not str"),
    ({"output": 123}, "output=123: output= takes a path, not int"),
    ({"baseline": 123}, "baseline=123: baseline= takes a path, not int"),
    ({"alpha": True}, "alpha=True: alpha= takes a number 0..1, not bool"),
])
def test_a_keyword_of_the_wrong_type_is_refused_naming_it(fields, message):
    from ragjudge import load_config
    from ragjudge.run import ScoreRequest

    with pytest.raises(OptionError) as info:
        ScoreRequest("in.jsonl", **fields).check(load_config(None))
    assert str(info.value) == message
    assert info.value.fields == (next(field for field in fields if field in message.split("=")[0]),)


def test_evaluate_refuses_a_wrong_type_before_any_call(judge, tmp_path):
    from ragjudge import evaluate, load_config

    source = write_jsonl(tmp_path / "in.jsonl", [{**GOOD, "id": "a"}])
    for fields, message in (({"limit": "3"}, "limit='3': limit= takes a whole number >= 1, not str"),
                            ({"output": 123}, "output=123: output= takes a path, not int"),
                            ({"max_drop": "abc"}, "max_drop='abc': max_drop= takes a number 0..1, not str")):
        with pytest.raises(ConfigError) as info:
            evaluate(source, load_config(None, model="openai/fake-judge"), transport=judge, **fields)
        assert str(info.value) == message
    assert judge.calls == 0


def test_numbers_of_the_right_type_pass():
    from ragjudge import load_config
    from ragjudge.run import ScoreRequest
    from ragjudge.run.checks import check_types

    check_types(ScoreRequest("in.jsonl", limit=3, max_regressions=0, max_drop=0, alpha=0.05, output="o.jsonl"))
    ScoreRequest("in.jsonl", sample=2, seed=0).check(load_config(None))
