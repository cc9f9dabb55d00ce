-- What a re-run saw, beside what the first run wrote: run_id and created_at stay the first run's (a task is never
-- younger than the kernels translated from it); last_run_id and last_seen_at name the latest run that stored it.
ALTER TABLE tasks ADD COLUMN last_run_id VARCHAR;
ALTER TABLE tasks ADD COLUMN last_seen_at TIMESTAMP;
UPDATE tasks SET last_run_id = run_id, last_seen_at = created_at;
