"""Misuse that must fail: a handler whose first parameter is not a JobContext of its result.

Each line that must fail ends with ``# E: <error code>``.
"""

import jobtable


async def wants_a_string(ctx: str, payload: int) -> int:
    return payload


def publishes_strings(ctx: jobtable.JobContext[str], payload: int) -> int:
    return payload


def register(runner: jobtable.Runner) -> None:
    runner.register("string", wants_a_string)  # E: arg-type
    runner.register("mismatch", publishes_strings)  # E: arg-type
