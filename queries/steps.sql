-- The queries of job_steps: the completed steps of jobs' handlers (ctx.step).

-- name: RecordJobStep :execrows
-- RecordJobStep records the output of the step name of job id while the claim
-- of attempt holds: one statement, so the check of the claim and the insert
-- are one transaction, and a runner that lost the claim records nothing. A
-- step the job has recorded already is left as it is (no row changed).
INSERT INTO job_steps (job_id, name, output, recorded_at, attempt)
SELECT jobs.id, @name, @output, @now, jobs.attempt FROM jobs
WHERE jobs.id = @id AND jobs.status = 'running' AND jobs.attempt = @attempt
ON CONFLICT (job_id, name) DO NOTHING;

-- name: GetJobStep :one
-- GetJobStep reads the output of the step name of job id, if recorded.
SELECT output FROM job_steps WHERE job_id = @job_id AND name = @name;

-- name: ListJobSteps :many
-- ListJobSteps reads every recorded step of job id, in the order recorded.
SELECT name, output, recorded_at, attempt FROM job_steps
WHERE job_id = @job_id ORDER BY recorded_at, name;
