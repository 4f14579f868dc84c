"""The Store's tools for operators: retry, delete, prune, runners, stats, the schema."""
