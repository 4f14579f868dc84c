"""Settings for the tests that prove a state machine fails on a planted fault.

Finding one failing example is enough: no shrinking, which would only slow
the proof down, no example database, and every health check off. The
budget is generous: the search stops at the first failure, so a fault that
is easy to find costs no more, and one that a random search finds in most
runs of 200 examples but not all is found in all of them.
"""

from hypothesis import HealthCheck, Phase, settings

FIND_SETTINGS = settings(
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    report_multiple_bugs=False,
    max_examples=1000,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
