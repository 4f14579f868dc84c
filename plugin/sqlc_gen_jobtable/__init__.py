"""sqlc-gen-jobtable: a sqlc process plugin that writes strictly typed Python.

sqlc sends a generate request as JSON on stdin; the plugin answers with the
files to write: a models module with one class per table, and one module per
query file holding each query's SQL as a constant and a ``Querier`` class
whose methods take keyword-only, typed arguments. It targets the standard
library's ``sqlite3`` and psycopg 3, and never emits ``Any``: a type or command
it cannot map exactly is an error that names the query, the column and the
type.
"""
