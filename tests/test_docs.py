"""The documentation says what the code does: generated pages match their source."""

from pathlib import Path

import yaml

from ragjudge import configdoc
from ragjudge.config import Config, load_config

ROOT = Path(__file__).resolve().parent.parent


def test_default_yaml_is_generated_from_the_settings():
    path = ROOT / "ragjudge" / "configs" / "default.yaml"
    assert path.read_text(encoding="utf-8") == configdoc.default_yaml(), "run: python scripts/gen_docs.py"


def test_default_yaml_loads_to_the_defaults():
    path = ROOT / "ragjudge" / "configs" / "default.yaml"
    assert load_config(path) == Config()
    assert set(yaml.safe_load(path.read_text())) == set(Config.model_fields)


def test_configuration_page_is_generated_from_the_settings():
    path = ROOT / "docs" / "configuration.md"
    text = path.read_text(encoding="utf-8")
    assert text == configdoc.markdown(), "run: python scripts/gen_docs.py"
    for name, model, _ in configdoc.SECTIONS:
        if model is not None:
            for key in model.model_fields:
                assert f"`{name}.{key}`" in text
