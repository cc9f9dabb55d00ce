-- The protocol key of each evaluation (hipforge.execution.protocol): the evaluator's code and settings it ran
-- under. A re-run reuses a stored verdict only under the same key; rows from before this column have none.
ALTER TABLE evaluations ADD COLUMN protocol VARCHAR;
CREATE INDEX evaluations_by_content ON evaluations (kernel_id, task_id, protocol);
