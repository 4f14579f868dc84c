"""Waiting for a job's typed result: the Kind's waits and the process's registry of them."""
