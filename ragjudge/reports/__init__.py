"""Reports of a run, all read from the same ``Summary`` (and, for per-row reports, the scored
table): ``console`` (the terminal), ``summary`` (summary JSON), ``junit`` (JUnit XML),
``markdown`` (a Markdown summary, GitHub's job summary), ``annotations`` (GitHub workflow
commands on failing rows) and ``html`` (one self-contained HTML file). Templates are Jinja2
files under ``templates/``.
"""
