"""jobtable's benchmark: ``make bench`` (``python -m bench``).

It measures the runner end to end on each engine and, beside every figure,
the raw limit of the same SQL statements (the generated Querier's constants)
run in a tight Python loop without the runner, in the same run by the same
program. It is not part of the test suite; see BENCHMARKS.md for a reading.

The library never runs SQL of its own making; this package does, for setup
(bulk-loading finished rows, resetting tables) and for the raw limits.
"""
