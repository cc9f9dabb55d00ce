-- As tasks (0009): a re-stored record or checkpoint keeps the run_id and created_at of the run that first stored it
-- (it is never younger than what was made from it); last_run_id and last_seen_at name the latest run that stored
-- it, and "the newest snapshot / checkpoint" is read by last_seen_at.
ALTER TABLE records ADD COLUMN last_run_id VARCHAR;
ALTER TABLE records ADD COLUMN last_seen_at TIMESTAMP;
UPDATE records SET last_run_id = run_id, last_seen_at = created_at;
ALTER TABLE checkpoints ADD COLUMN last_run_id VARCHAR;
ALTER TABLE checkpoints ADD COLUMN last_seen_at TIMESTAMP;
UPDATE checkpoints SET last_run_id = run_id, last_seen_at = created_at;
