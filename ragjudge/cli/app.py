"""The ``ragjudge`` command's Typer apps: ``app`` with its root callback (``--version``) and the
sub-command groups ``cache``, ``batch`` and ``config``; the commands themselves are declared in
``score``, ``calibrate`` and ``tools`` beside this module, and ``ragjudge.cli`` lists them in
``COMMANDS``' order."""

from __future__ import annotations

from typing import Annotated

import typer

from ragjudge import __version__

app = typer.Typer(
    name="ragjudge",
    help="Batch evaluator for RAG: context sufficiency and response completeness judges with a CI gate.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ragjudge {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")] = False,
) -> None:
    """Batch evaluator for RAG: context sufficiency and response completeness judges with a CI gate."""


cache_app = typer.Typer(help="Inspect or clear the judge response cache.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")
batch_app = typer.Typer(help="Collect a run submitted to the provider's batch API (score --batch) and finish it.", no_args_is_help=True)
app.add_typer(batch_app, name="batch")
config_app = typer.Typer(help="Print the bundled configs (every key with its default, the embedded judge's, MLflow's).", no_args_is_help=True)
app.add_typer(config_app, name="config")

# the score command said why it stopped (``score._show``): ``ragjudge.cli.main`` adds nothing
_SAID: dict[str, bool] = {}
