-- KernelBench reports: one row per (run, model, task) with what the model produced and how it fared,
-- and one row per (run, model, level, tolerance) with KernelBench's scores. An evaluation runs once at
-- the loose fp32 tolerance (1e-2); the strict verdict (1e-4) is judged from its max abs/rel errors.
CREATE TABLE report_tasks (
    run_id          VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,             -- the report's partition: offline-agents, gemini, a checkpoint
    task_set        VARCHAR NOT NULL,             -- kernelbench | reference (no KernelBench source configured)
    task_id         VARCHAR NOT NULL,
    task_name       VARCHAR NOT NULL,
    level           INTEGER NOT NULL,
    kernel_id       VARCHAR,                      -- null when the model declined or wrote no code
    eval_id         VARCHAR,
    declined        VARCHAR,
    verdict         VARCHAR,
    compiled        BOOLEAN NOT NULL,
    correct_strict  BOOLEAN NOT NULL,             -- atol = rtol = 1e-4 for fp32 (KernelBench today)
    correct_loose   BOOLEAN NOT NULL,             -- 1e-2 (KernelBench v0, likely the seed's)
    max_abs_err     DOUBLE,
    max_rel_err     DOUBLE,
    speedup_eager   DOUBLE,
    speedup_compiled DOUBLE,
    backend         VARCHAR NOT NULL,
    arch            VARCHAR,
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, model, task_id)
);

CREATE TABLE report_levels (
    run_id          VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    task_set        VARCHAR NOT NULL,
    level           INTEGER NOT NULL,
    tolerance       DOUBLE NOT NULL,              -- the fp32 atol = rtol the row is scored at
    tasks           INTEGER NOT NULL,
    compiled        DOUBLE NOT NULL,              -- shares of all tasks
    correct         DOUBLE NOT NULL,
    fast_0          DOUBLE NOT NULL,
    fast_0_5        DOUBLE NOT NULL,
    fast_0_8        DOUBLE NOT NULL,
    fast_1          DOUBLE NOT NULL,
    fast_1_2        DOUBLE NOT NULL,
    fast_1_5        DOUBLE NOT NULL,
    fast_2          DOUBLE NOT NULL,
    geomean_eager   DOUBLE,                       -- over correct kernels; null when none
    geomean_compiled DOUBLE,                      -- null also when torch.compile was not timed (cpu)
    backend         VARCHAR NOT NULL,
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, model, level, tolerance)
);

-- The nightly re-verification of each task's best kernel: a verdict that changed is flagged.
CREATE TABLE reverifications (
    run_id            VARCHAR NOT NULL,
    kernel_id         VARCHAR NOT NULL,
    task_id           VARCHAR NOT NULL,
    previous_eval_id  VARCHAR NOT NULL,
    eval_id           VARCHAR NOT NULL,
    previous_verdict  VARCHAR NOT NULL,
    verdict           VARCHAR NOT NULL,
    changed           BOOLEAN NOT NULL,
    backend           VARCHAR NOT NULL,
    created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, kernel_id, task_id)
);
