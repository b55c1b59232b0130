"""Reports of a run, all read from the same ``Summary`` (and, for per-row reports, the scored
table): ``console`` (the terminal), ``summary`` (summary JSON), ``junit`` (JUnit XML),
``markdown`` (a Markdown summary, GitHub's job summary), ``annotations`` (GitHub workflow
commands on failing rows) and ``html`` (one self-contained HTML file). Templates are Jinja2
files under ``templates/``; ``terminal`` prints a run on stderr.
"""

import re

# control characters but tab, newline and carriage return: an ESC would start a terminal escape
# in a CI log, a NUL or a C1 code garbles it (the JUnit writer replaces the same, for XML)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character but tab, newline and carriage return (ESC, NUL,
    DEL, C1 codes) replaced by U+FFFD, as the JUnit writer does."""
    return _CONTROL.sub("\ufffd", text)
