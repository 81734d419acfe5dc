from pathlib import Path

import pytest

from rag.config import Settings
from rag.errors import ConfigError


def test_from_env_reads_and_coerces():
    s = Settings.from_env(env={"RAG_HOME": "/tmp/x", "RAG_RECALL_K": "40", "RAG_HYDE": "yes", "RAG_CHROMA_HOST": "h"})
    assert s.home == Path("/tmp/x") and s.recall_k == 40 and s.hyde is True and s.server_mode


def test_bad_values_name_the_variable():
    with pytest.raises(ConfigError, match="RAG_RECALL_K"):
        Settings.from_env(env={"RAG_RECALL_K": "many"})
    with pytest.raises(ConfigError, match="chunk_overlap"):
        Settings.from_env(env={"RAG_CHUNK_SIZE": "100", "RAG_CHUNK_OVERLAP": "100"})


def test_fingerprint_tracks_result_fields_only():
    base = Settings.from_env(env={})
    assert base.fingerprint() == Settings.from_env(env={"RAG_HOME": "/elsewhere"}).fingerprint()
    assert base.fingerprint() != base.replace(recall_k=21).fingerprint()
    assert base.public_dict()["llm_api_key"] == ""
    assert base.replace(llm_api_key="sk-1").public_dict()["llm_api_key"] == "***"


def test_every_field_is_documented():
    assert all(doc for _, _, doc in Settings.describe())


def test_readme_documents_every_setting():
    """The README's settings table lists every RAG_* variable with its current default and the
    description the code gives it (``Settings.describe``)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for env, default, doc in Settings.describe():
        cell = doc.replace("|", "\\|")  # a pipe in a table cell is escaped
        assert f"| `{env}` | `{default}` | {cell} |" in readme, f"README settings table: add or update {env}"
