-- The step from schema version 5 to 6, run in the one transaction that
-- records the new version: the jobs table's tags (with a constant default)
-- and meta (nullable), so adding them rewrites no row; then job_tags, its
-- index, and the triggers that fill it, as postgres/schema.sql has them.
-- Every job is kept, with no tag and no meta.

-- name: AddJobTagsColumnsV6 :exec
ALTER TABLE jobs ADD COLUMN tags text NOT NULL DEFAULT '[]', ADD COLUMN meta text;

-- name: CreateJobTagsTableV6 :exec
CREATE TABLE job_tags (
    tag text NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (tag, seq)
);

-- name: CreateJobTagsSeqIndexV6 :exec
CREATE INDEX job_tags_seq ON job_tags (seq);

-- name: CreateIndexTagsFunctionV6 :exec
CREATE FUNCTION jobtable_index_tags() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO job_tags (tag, seq)
    SELECT DISTINCT tag.value, inserted.seq
    FROM inserted, jsonb_array_elements_text(inserted.tags::jsonb) AS tag(value)
    WHERE inserted.tags <> '[]';
    RETURN NULL;
END
$$;

-- name: CreateUnindexTagsFunctionV6 :exec
CREATE FUNCTION jobtable_unindex_tags() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    DELETE FROM job_tags USING deleted
    WHERE job_tags.seq = deleted.seq AND deleted.tags <> '[]';
    RETURN NULL;
END
$$;

-- name: CreateIndexTagsTriggerV6 :exec
CREATE TRIGGER jobs_index_tags AFTER INSERT ON jobs
REFERENCING NEW TABLE AS inserted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_index_tags();

-- name: CreateUnindexTagsTriggerV6 :exec
CREATE TRIGGER jobs_unindex_tags AFTER DELETE ON jobs
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION jobtable_unindex_tags();
