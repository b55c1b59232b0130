"""Trace sources and sinks: spans -> evaluation rows (``spans``), MLflow traces in and
feedback out (``mlflow``, the ``[mlflow]`` extra). Importing this package imports neither
MLflow nor pandas."""
