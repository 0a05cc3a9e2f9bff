-- A rating study: its outputs (what is rated, blinded by an opaque id), who rates which, and their answers.
-- Portable SQL (SQLite and PostgreSQL): text ids made by consilium/study, integer flags, no autoincrement.
CREATE TABLE studies (
    id TEXT PRIMARY KEY,
    run_key TEXT NOT NULL UNIQUE,
    run_dir TEXT NOT NULL,
    rubric TEXT NOT NULL,
    rubric_version INTEGER NOT NULL,
    per_output INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    admin_hash TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE raters (
    study_id TEXT NOT NULL REFERENCES studies (id),
    rater TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    revoked INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (study_id, rater)
);
CREATE TABLE outputs (
    id TEXT PRIMARY KEY,
    study_id TEXT NOT NULL REFERENCES studies (id),
    draw INTEGER NOT NULL,
    case_id TEXT NOT NULL,
    component TEXT NOT NULL,
    variant TEXT NOT NULL,
    model TEXT NOT NULL,
    run TEXT NOT NULL,
    trace TEXT NOT NULL,
    case_text TEXT NOT NULL,
    output_text TEXT NOT NULL
);
CREATE TABLE assignments (
    study_id TEXT NOT NULL REFERENCES studies (id),
    rater TEXT NOT NULL,
    item TEXT NOT NULL REFERENCES outputs (id),
    position INTEGER NOT NULL,
    PRIMARY KEY (study_id, rater, item)
);
CREATE TABLE answers (
    study_id TEXT NOT NULL REFERENCES studies (id),
    rater TEXT NOT NULL,
    item TEXT NOT NULL REFERENCES outputs (id),
    criterion TEXT NOT NULL,
    score DOUBLE PRECISION,
    not_evaluable INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    comment TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (study_id, rater, item, criterion)
);
CREATE INDEX outputs_of_study ON outputs (study_id, draw);
CREATE INDEX answers_of_item ON answers (study_id, item);
