"""Misuse that must fail: a sub-workflow whose result is not the running job's type, bad units.

``ctx.add_workflow(sub, result=node)`` hands the running job's dependents
node's result in place of the running job's, so node's kind must return the
running job's result type. Each line that must fail ends with ``# E: <error code>``.
"""

import jobtable

order = jobtable.Kind("order", int, str)
fetch = jobtable.Kind("fetch", int, int)
render = jobtable.Kind("render", int, str)


def handler(ctx: jobtable.JobContext[str], n: int) -> str:
    sub = jobtable.Workflow("render", priority=3)
    fetched = sub.add(fetch, n)
    rendered = sub.add(render, fetched)
    ctx.add_workflow(sub, result=rendered)
    ctx.add_workflow(sub, result=fetched)  # E: arg-type
    ctx.add_workflow(rendered)  # E: arg-type
    ctx.workflow.add_workflow(sub, result="rendered")  # E: arg-type
    return "placed"


def declarations() -> None:
    jobtable.Workflow("ranked", priority="high")  # E: arg-type
    jobtable.Workflow("ranked", 3)  # E: call-arg
    jobtable.Workflow("due", deadline=5)  # E: arg-type
    jobtable.Workflow("due", deadline="tomorrow")  # E: arg-type
