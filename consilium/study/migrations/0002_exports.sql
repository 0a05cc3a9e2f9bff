-- The files `study export` wrote, by path and content hash: an export replaces only a file it wrote and that
-- nobody has changed since.
CREATE TABLE exports (
    study_id TEXT NOT NULL REFERENCES studies (id),
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    written_at TEXT NOT NULL,
    PRIMARY KEY (study_id, path)
);
