-- Ragscope catalog. One SQLite file per data directory, WAL mode.
CREATE TABLE IF NOT EXISTS kbs (
    name TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    embed_model TEXT NOT NULL,
    embed_dim INTEGER NOT NULL,
    chunk_size INTEGER NOT NULL,
    chunk_overlap INTEGER NOT NULL,
    index_version INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS documents (
    kb TEXT NOT NULL,
    id TEXT NOT NULL,
    name TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',
    doc_date TEXT NOT NULL DEFAULT '',
    active_revision INTEGER,
    created_at TEXT NOT NULL,
    PRIMARY KEY (kb, id)
);
-- state: writing -> active -> retired -> dropped; writing -> failed (crash or error)
CREATE TABLE IF NOT EXISTS revisions (
    kb TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    parser TEXT NOT NULL,
    parser_version TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    pages INTEGER NOT NULL,
    chunks INTEGER NOT NULL DEFAULT 0,
    embed_model TEXT NOT NULL,
    state TEXT NOT NULL,
    text TEXT,
    page_spans TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    PRIMARY KEY (kb, doc_id, revision)
);
CREATE TABLE IF NOT EXISTS chunks (
    kb TEXT NOT NULL,
    id TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    page INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    char_start INTEGER NOT NULL,
    char_end INTEGER NOT NULL,
    heading_path TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kb, id)
);
CREATE INDEX IF NOT EXISTS revisions_by_state ON revisions (kb, state);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks (kb, doc_id, revision, idx);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    kb TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    error TEXT
);
CREATE TABLE IF NOT EXISTS traces (
    id TEXT PRIMARY KEY,
    kb TEXT NOT NULL,
    question TEXT NOT NULL,
    created_at TEXT NOT NULL,
    json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS traces_by_kb ON traces (kb, created_at);
CREATE TABLE IF NOT EXISTS chat_turns (
    id TEXT PRIMARY KEY,
    kb TEXT NOT NULL,
    conversation TEXT NOT NULL,
    seq INTEGER NOT NULL,
    question TEXT NOT NULL,
    answer_json TEXT NOT NULL,
    trace_id TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_by_conv ON chat_turns (kb, conversation, seq);
CREATE TABLE IF NOT EXISTS eval_runs (
    id TEXT PRIMARY KEY,
    kb TEXT NOT NULL,
    goldset TEXT NOT NULL,
    config_fingerprint TEXT NOT NULL,
    index_revision INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    json TEXT NOT NULL
);
