-- Core tables. Every row carries the Dagster run that wrote it and when.
-- Ids are content hashes: task_id of the normalized task source, kernel_id of the candidate source.

CREATE TABLE tasks (
    task_id        VARCHAR PRIMARY KEY,
    name           VARCHAR NOT NULL,
    origin         VARCHAR NOT NULL,          -- reference | kernelbench | synthetic | file
    level          INTEGER,                   -- KernelBench level, when it is one
    problem_id     INTEGER,
    category       VARCHAR,
    source         VARCHAR NOT NULL,
    status         VARCHAR NOT NULL CHECK (status IN ('accepted', 'rejected')),
    reject_code    VARCHAR,
    reject_reason  VARCHAR,
    smoke_source   VARCHAR,                   -- the shrunken variant that runs on CPU in seconds
    smoke_constants JSON,                     -- {name: [full, smoke]}
    output_shapes  JSON,
    smoke_seconds  DOUBLE,
    run_id         VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE kernels (
    kernel_id   VARCHAR PRIMARY KEY,
    task_id     VARCHAR NOT NULL,
    source      VARCHAR NOT NULL,
    language    VARCHAR NOT NULL DEFAULT 'hip',
    agent       VARCHAR NOT NULL,             -- which agent (or person) produced it
    model       VARCHAR,                      -- LLM or checkpoint behind the agent, if any
    generation  INTEGER,
    run_id      VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE evaluations (
    eval_id        VARCHAR PRIMARY KEY,
    kernel_id      VARCHAR NOT NULL,
    task_id        VARCHAR NOT NULL,
    backend        VARCHAR NOT NULL,          -- rocm | cuda | cpu
    arch           VARCHAR,
    verdict        VARCHAR NOT NULL CHECK (verdict IN
                     ('compile_error', 'runtime_error', 'timeout', 'incorrect', 'hacked', 'correct')),
    message        VARCHAR,
    hack_check     VARCHAR,
    failing_seed   INTEGER,
    max_abs_err    DOUBLE,
    max_rel_err    DOUBLE,
    runtime_ms     DOUBLE,
    eager_ms       DOUBLE,
    compiled_ms    DOUBLE,
    speedup_eager  DOUBLE,
    speedup_compiled DOUBLE,
    detail         JSON,                      -- the full verdict, logs included
    run_id         VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE lineage_edges (
    child_id    VARCHAR NOT NULL,
    parent_id   VARCHAR NOT NULL,
    relation    VARCHAR NOT NULL CHECK (relation IN
                  ('mutated_from', 'composed_of', 'translated_from', 'evolved_from', 'inspired_by',
                   'evaluated_by', 'recorded_as', 'trained_into')),
    run_id      VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (child_id, parent_id, relation)
);

CREATE TABLE llm_calls (
    call_id        VARCHAR PRIMARY KEY,
    provider       VARCHAR NOT NULL,
    model          VARCHAR NOT NULL,
    agent          VARCHAR NOT NULL,
    cache_key      VARCHAR NOT NULL,
    prompt         VARCHAR NOT NULL,
    response       VARCHAR,
    error          VARCHAR,
    input_tokens   INTEGER,
    output_tokens  INTEGER,
    latency_s      DOUBLE,
    cost_usd       DOUBLE,
    cached         BOOLEAN NOT NULL DEFAULT false,
    run_id         VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE INDEX kernels_by_task ON kernels (task_id);
CREATE INDEX evaluations_by_kernel ON evaluations (kernel_id);
CREATE INDEX lineage_by_parent ON lineage_edges (parent_id);
CREATE INDEX llm_calls_by_key ON llm_calls (cache_key);
