-- Every report row says what it measured: the device architecture, the evaluator's protocol key (its code and
-- settings, as stored with evaluations) and the input size (full, or the cpu backend's smoke scale).
-- Rows stored before this migration keep NULL protocol; their size follows from the backend.
ALTER TABLE report_levels ADD COLUMN arch VARCHAR;
ALTER TABLE report_levels ADD COLUMN protocol VARCHAR;
ALTER TABLE report_levels ADD COLUMN size VARCHAR;
ALTER TABLE report_tasks ADD COLUMN protocol VARCHAR;
ALTER TABLE report_tasks ADD COLUMN size VARCHAR;
UPDATE report_levels SET arch = (SELECT any_value(t.arch) FROM report_tasks t WHERE t.run_id = report_levels.run_id
                                 AND t.model = report_levels.model);
UPDATE report_levels SET size = CASE WHEN backend = 'cpu' THEN 'smoke' ELSE 'full' END;
UPDATE report_tasks SET size = CASE WHEN backend = 'cpu' THEN 'smoke' ELSE 'full' END;
