"""What an upgrade test compares between an upgraded PostgreSQL schema and a new one.

PG_SHAPE reads, in the current schema, every column (with its type,
nullability and default), every index's definition, the triggers on the
jobs and job_tags tables and every function's source (an upgrade step
writes out again the functions the schema defines): an upgrade is right
when its rows equal a new schema's.
"""

PG_SHAPE = (
    "SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, '')"
    " FROM information_schema.columns WHERE table_schema = current_schema()"
    " UNION ALL SELECT 'index', indexname,"
    " replace(indexdef, current_schema() || '.', ''), '', ''"
    " FROM pg_indexes WHERE schemaname = current_schema()"
    " UNION ALL SELECT 'trigger', tgname, tgrelid::regclass::text, tgtype::text, ''"
    " FROM pg_trigger WHERE NOT tgisinternal"
    " AND tgrelid::regclass::text IN ('jobs', 'job_tags')"
    " UNION ALL SELECT 'function', proname, md5(prosrc), '', ''"
    " FROM pg_proc WHERE pronamespace = current_schema()::regnamespace"
)
