"""The OpenTelemetry tests: a package, so that its conftest is otel.conftest to mypy."""
