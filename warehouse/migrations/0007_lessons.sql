-- The summarizer's lessons: one row per run of the `lessons` asset; prompts read the newest.
CREATE TABLE lessons (
    lessons_id   VARCHAR PRIMARY KEY,          -- uuid
    summarizer   VARCHAR NOT NULL,             -- offline-summarizer | llm-summarizer:<model>
    text         VARCHAR NOT NULL,             -- what prompts get ("" when nothing failed)
    failures     INTEGER NOT NULL,             -- failures summarized (evaluations and rejections)
    clusters     JSON,                         -- [{title, verdict, count, advice, examples}]
    run_id       VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
);

-- Candidates an LLM agent wrote that the plausibility judge kept off the GPU: never evaluated, so
-- not in evaluations, but failures the summarizer learns from and negatives for training records.
CREATE TABLE plausibility_rejections (
    rejection_id VARCHAR PRIMARY KEY,          -- uuid
    task_id      VARCHAR NOT NULL,
    kernel_id    VARCHAR NOT NULL,             -- content address of the rejected source
    source       VARCHAR NOT NULL,
    agent        VARCHAR NOT NULL,             -- who wrote it
    judge        VARCHAR NOT NULL,
    score        DOUBLE NOT NULL,
    reasons      VARCHAR NOT NULL,
    run_id       VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
);
CREATE INDEX rejections_by_task ON plausibility_rejections (task_id);
