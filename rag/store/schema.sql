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
-- an upload looks its document up by name: without this, a scan of every document (O(n) per upload)
CREATE INDEX IF NOT EXISTS documents_by_name ON documents (kb, name);
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
    created_at TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT 'local'  -- whose chat it is (rag.store.access.Principal.id)
);
CREATE INDEX IF NOT EXISTS turns_by_conv ON chat_turns (kb, conversation, seq);
CREATE TABLE IF NOT EXISTS eval_runs (
    id TEXT PRIMARY KEY,
    kb TEXT NOT NULL,
    goldset TEXT NOT NULL,
    config_fingerprint TEXT NOT NULL,
    index_revision INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    json TEXT NOT NULL,
    user_id TEXT NOT NULL DEFAULT 'local'  -- who ran it
);
-- Who may do what in each knowledge base (rag.store.access); the local owner needs no row.
CREATE TABLE IF NOT EXISTS members (
    kb TEXT NOT NULL,
    user_id TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('reader', 'editor', 'owner')),
    added_by TEXT NOT NULL,
    added_at TEXT NOT NULL,
    PRIMARY KEY (kb, user_id)
);
CREATE INDEX IF NOT EXISTS members_by_user ON members (user_id);
-- Append-only audit trail (rag.store.audit): the triggers refuse to change or remove an entry.
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    user_id TEXT NOT NULL,
    user_name TEXT NOT NULL,
    action TEXT NOT NULL,
    kb TEXT NOT NULL,
    target TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS audit_by_kb ON audit (kb, seq);
CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
-- The built-in user list (rag.store.users) for a server without an identity provider.
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    password_hash TEXT NOT NULL,  -- argon2id (argon2-cffi); never the password
    created_at TEXT NOT NULL
);
