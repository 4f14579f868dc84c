-- The statements that let a role use the jobtable tables of a schema it
-- does not own: `jobtable grant` prints them, or runs them as the owner.

-- name: RoleGrants :many
-- RoleGrants lists, in order, the statements that give the role grantee
-- what runners, web processes, the CLI and the dashboard need on the
-- jobtable tables of the current schema, and nothing more: USAGE on the
-- schema; SELECT, INSERT, UPDATE and DELETE on each table but
-- jobtable_schema, which it only reads (its version is what `jobtable
-- migrate` writes, as the owner); EXECUTE on the schema's functions, which
-- PostgreSQL gives PUBLIC by default and a hardened database may have
-- revoked (an enqueue's trigger calls them). No sequence: jobs.seq is an
-- identity column, which the INSERT right covers. Neither the creation of
-- anything nor ANALYZE: runners analyze jobs only as its owner (see
-- JobsStatisticsStale). Every name is quoted and qualified, so the
-- statements mean the same whatever search_path runs them. With no
-- schema on the search_path, none. The names are listed, not read from
-- the catalog: the schema may hold the application's own tables too
-- (Django's public schema), which the role must not get through this;
-- tests/test_least_privilege.py checks that the list names every table
-- and function postgres/schema.sql creates.
SELECT grants.n::integer AS n,
    format(grants.template, current_schema(), @grantee::text)::text AS statement
FROM (VALUES
    (1, 'GRANT USAGE ON SCHEMA %1$I TO %2$I'),
    (2, 'GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE %1$I.jobs, %1$I.workflows, '
        '%1$I.job_deps, %1$I.job_tags, %1$I.job_steps, %1$I.queues, %1$I.queue_starts, '
        '%1$I.runners, %1$I.signals, %1$I.job_waits TO %2$I'),
    (3, 'GRANT SELECT ON TABLE %1$I.jobtable_schema TO %2$I'),
    (4, 'GRANT EXECUTE ON FUNCTION %1$I.jobtable_channel(text), %1$I.jobtable_listen(), '
        '%1$I.jobtable_notify_enqueue(), %1$I.jobtable_index_tags(), '
        '%1$I.jobtable_unindex_tags(), %1$I.jobtable_move_tags(), '
        '%1$I.jobtable_payload_key(text, text), %1$I.jobtable_delete_steps(), '
        '%1$I.jobtable_delete_deps(), %1$I.jobtable_delete_waits(), '
        '%1$I.jobtable_workflow_slot(), %1$I.jobtable_workflow_slot_retry() TO %2$I')
) AS grants (n, template)
WHERE current_schema() IS NOT NULL
ORDER BY 1;
