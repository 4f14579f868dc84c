"""The SQLite engine: one database file, one writer connection, a pool of readers."""
