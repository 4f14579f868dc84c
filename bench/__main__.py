"""Runs the benchmark: ``python -m bench --help``."""

from bench._main import main

if __name__ == "__main__":
    main()
