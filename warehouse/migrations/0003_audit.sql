-- Offline auditor: one row per audited case and run, with both verifiers' verdicts on it.
CREATE TABLE audit_cases (
    run_id          VARCHAR NOT NULL,
    case_name       VARCHAR NOT NULL,
    category        VARCHAR NOT NULL CHECK (category IN ('correct', 'incorrect', 'deceptive')),
    origin          VARCHAR NOT NULL,             -- corpus | injected
    expected_check  VARCHAR,                      -- deceptive: the hack check that should catch it
    backend         VARCHAR NOT NULL,             -- the executor's backend (the deterministic gate)
    gate_verdict    VARCHAR NOT NULL,
    gate_check      VARCHAR,
    gate_passed     BOOLEAN NOT NULL,
    gate_message    VARCHAR,
    judge           VARCHAR NOT NULL,             -- which plausibility judge
    judge_score     DOUBLE,
    judge_passed    BOOLEAN NOT NULL,
    judge_reasons   VARCHAR,
    created_at      TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (run_id, case_name)
);
