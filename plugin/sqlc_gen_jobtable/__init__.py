"""sqlc-gen-jobtable: a sqlc process plugin that writes strictly typed Python.

sqlc sends a generate request as JSON on stdin; the plugin answers with the
files to write: a models module with a class per table and per enum, and one
module per query file holding each query's SQL as a constant and a
``Querier`` class (and an ``AsyncQuerier``) whose methods take keyword-only,
typed arguments. It targets the standard library's ``sqlite3`` and psycopg 3,
and never emits ``Any``: a type or command it cannot map exactly is an error
that names the query, the column and the type. plugin/README.md documents
the options, the types and the refusals.
"""
