-- The step from schema version 16 to 17, run in the one transaction that
-- records the new version: the workflows table's concurrency and slot
-- columns, nullable, so adding them rewrites no row (every workflow is
-- kept, with no limit); the index of the workflows holding or waiting for
-- a slot; and the functions and triggers that free and admit them, as
-- postgres/schema.sql has them. Each statement may run again on a schema
-- that has what it makes.

-- name: AddWorkflowSlotColumnsV17 :exec
ALTER TABLE workflows ADD COLUMN IF NOT EXISTS concurrency integer
        CHECK (concurrency IS NULL OR concurrency >= 1),
    ADD COLUMN IF NOT EXISTS slot text;

-- name: CreateWorkflowSlotsIndexV17 :exec
CREATE INDEX IF NOT EXISTS workflows_slots ON workflows (name, slot, created_at, id)
WHERE slot IS NOT NULL;

-- name: CreateWorkflowSlotFunctionV17 :exec
CREATE OR REPLACE FUNCTION jobtable_workflow_slot() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    ended text;
    moment timestamptz;
    wf_name text;
    admitted text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        ended := OLD.workflow_id;
        moment := now();
    ELSE
        ended := NEW.workflow_id;
        moment := NEW.updated_at;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM workflows WHERE id = ended AND slot IN ('waiting', 'held')) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('jobtable-workflow-slots:' || current_schema()));
    -- A new statement, after the lock: it sees the ends others committed.
    SELECT name INTO wf_name FROM workflows
    WHERE id = ended AND slot IN ('waiting', 'held')
        AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.workflow_id = ended
            AND jobs.status IN ('queued', 'pending', 'running'));
    IF wf_name IS NULL THEN
        RETURN NULL;
    END IF;
    UPDATE jobs SET pending_deps = pending_deps - 1
    WHERE workflow_id = ended
        AND (SELECT slot FROM workflows WHERE id = ended) = 'waiting';
    UPDATE workflows SET slot = 'freed' WHERE id = ended;
    LOOP
        admitted := NULL;
        SELECT w.id INTO admitted FROM workflows AS w
        WHERE w.name = wf_name AND w.slot = 'waiting'
            AND w.concurrency > (SELECT count(*) FROM workflows AS h
                WHERE h.name = wf_name AND h.slot = 'held')
        ORDER BY w.created_at, w.id LIMIT 1
        FOR UPDATE SKIP LOCKED;
        EXIT WHEN admitted IS NULL;
        UPDATE workflows SET slot = 'held' WHERE id = admitted;
        UPDATE jobs
        SET pending_deps = pending_deps - 1,
            status = CASE WHEN status = 'pending' AND pending_deps = 1 THEN 'queued'
                ELSE status END,
            scheduled = CASE WHEN status = 'pending' AND pending_deps = 1
                THEN run_at > moment ELSE scheduled END,
            updated_at = CASE WHEN status = 'pending' AND pending_deps = 1 THEN moment
                ELSE updated_at END
        WHERE workflow_id = admitted;
        PERFORM pg_notify(jobtable_channel(current_schema()), '');
    END LOOP;
    RETURN NULL;
END
$$;

-- name: CreateWorkflowSlotEndTriggerV17 :exec
CREATE OR REPLACE TRIGGER jobs_workflow_slot_end AFTER UPDATE OF status ON jobs
FOR EACH ROW
WHEN (NEW.workflow_id IS NOT NULL
    AND NEW.status IN ('succeeded', 'failed', 'cancelled')
    AND OLD.status NOT IN ('succeeded', 'failed', 'cancelled'))
EXECUTE FUNCTION jobtable_workflow_slot();

-- name: CreateWorkflowSlotDeleteTriggerV17 :exec
CREATE OR REPLACE TRIGGER jobs_workflow_slot_delete AFTER DELETE ON jobs
FOR EACH ROW
WHEN (OLD.workflow_id IS NOT NULL AND OLD.status IN ('queued', 'pending', 'running'))
EXECUTE FUNCTION jobtable_workflow_slot();

-- name: CreateWorkflowSlotRetryFunctionV17 :exec
CREATE OR REPLACE FUNCTION jobtable_workflow_slot_retry() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE workflows SET slot = 'held' WHERE id = NEW.workflow_id AND slot = 'freed';
    RETURN NULL;
END
$$;

-- name: CreateWorkflowSlotRetryTriggerV17 :exec
CREATE OR REPLACE TRIGGER jobs_workflow_slot_retry AFTER UPDATE OF status ON jobs
FOR EACH ROW
WHEN (NEW.workflow_id IS NOT NULL
    AND OLD.status IN ('succeeded', 'failed', 'cancelled')
    AND NEW.status IN ('queued', 'pending'))
EXECUTE FUNCTION jobtable_workflow_slot_retry();
