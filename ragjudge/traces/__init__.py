"""Trace sources and sinks: spans -> evaluation rows (``spans``), MLflow traces in and
feedback out (``mlflow``, the ``[mlflow]`` extra), OpenTelemetry / OpenInference spans in (OTLP
JSON, Phoenix's span DataFrame) and Phoenix annotations out (``otel``, the ``[phoenix]`` extra
for the sink). Importing this package imports neither MLflow, Phoenix nor pandas."""
