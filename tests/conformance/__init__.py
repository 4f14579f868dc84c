"""The engine conformance suite: a package, so that its conftest is conformance.conftest to mypy."""
