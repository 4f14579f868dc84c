"""Types the overrides of the golden cases map columns to.

They are NewTypes of what the driver returns, so values pass through the
driver unchanged and the annotation still names the application's type.
"""

from typing import NewType, TypeAlias

Email = NewType("Email", str)
"""An email address, as the citext override of postgres_features types it."""

Sku = NewType("Sku", str)
"""A stock keeping unit, as the column override of the golden cases types it."""

SQLiteValue: TypeAlias = int | float | str | bytes | None
"""Any value SQLite stores, as the db_type any override of sqlite_features types it."""
