"""The example's job kind: declared once, imported by the web app and by the worker."""

import pydantic

import jobtable


class Welcome(pydantic.BaseModel):
    """Whom to welcome."""

    user_id: int


class Sent(pydantic.BaseModel):
    """What the welcome job did."""

    user_id: int
    message: str


welcome = jobtable.Kind("welcome", Welcome, Sent, max_attempts=3)
"""Welcomes a new user; retried twice if sending fails."""
