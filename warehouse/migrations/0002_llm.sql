-- LLM accounting: how many requests a call took (retries included; 0 for a cache hit or a replay
-- miss) and the sampling parameters it was made with.
ALTER TABLE llm_calls ADD COLUMN attempts INTEGER;
ALTER TABLE llm_calls ADD COLUMN params JSON;
