"""Settings for the tests that prove a state machine fails on a planted fault.

Finding one failing example is enough: no shrinking, which would only slow
the proof down, no example database, and every health check off. The
search is derandomized, so that a fault found once is found at every run:
a random search that finds it in most runs fails CI in the others.
"""

from hypothesis import HealthCheck, Phase, settings

FIND_SETTINGS = settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    report_multiple_bugs=False,
    max_examples=200,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    derandomize=True,
)
