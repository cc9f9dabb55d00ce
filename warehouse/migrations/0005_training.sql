-- Training: the SFT and RL records built from the archive, and the checkpoints trained on them.
-- Lineage: kernel (or task, for RL prompts) -recorded_as-> record -trained_into-> checkpoint.
CREATE TABLE records (
    record_id      VARCHAR NOT NULL,
    snapshot       VARCHAR NOT NULL,          -- the data snapshot (content hash of its record ids)
    kind           VARCHAR NOT NULL CHECK (kind IN ('sft', 'rl')),
    task_id        VARCHAR NOT NULL,
    kernel_id      VARCHAR,                   -- sft: the verified kernel it teaches
    prompt         JSON NOT NULL,             -- chat messages (system + task + instructions, lessons for rl)
    completion     JSON,                      -- sft: [assistant message with the kernel]
    lessons        VARCHAR,
    export_path    VARCHAR,                   -- the Hugging Face dataset export (parquet) it belongs to
    run_id         VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (record_id, snapshot)
);

CREATE TABLE checkpoints (
    checkpoint_id   VARCHAR PRIMARY KEY,
    stage           VARCHAR NOT NULL CHECK (stage IN ('sft', 'rl')),
    base_model      VARCHAR NOT NULL,         -- hub id or path it started from
    path            VARCHAR NOT NULL,         -- directory with weights, tokenizer and metadata.json
    data_snapshot   VARCHAR NOT NULL,
    hyperparameters JSON NOT NULL,
    metrics         JSON,                     -- losses, rewards, throughput
    run_id          VARCHAR NOT NULL,
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE INDEX records_by_snapshot ON records (snapshot);
