"""The runner and its services: each claims, runs, records or maintains one thing.

``runner`` starts and stops the services; ``producer`` claims jobs for free
worker slots, ``workers`` and ``executor`` run one attempt and decide its
outcome, ``completer`` stores outcomes, ``maintenance`` keeps the runner's
registration and recovers the jobs of dead runners, ``cancel_watch`` finds
cancel requests, and ``periodic`` enqueues the periodic kinds.
"""
