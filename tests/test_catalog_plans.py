"""The catalog's per-upload lookups are index searches, not scans: an upload costs the same in a
knowledge base of ten documents and of two hundred thousand."""

from __future__ import annotations

from rag.store.catalog import Catalog


def _plan_of(catalog: Catalog, call) -> list[str]:
    """The query plan of every statement ``call`` runs on the catalog's connection."""
    conn = catalog._conn()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        conn.set_trace_callback(None)
    selects = [s for s in seen if s.lstrip().upper().startswith("SELECT")]
    assert selects, f"no SELECT ran: {seen}"
    return [row[3] for sql in selects for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]


def test_an_upload_finds_its_document_by_name_through_an_index(tmp_path):
    catalog = Catalog(tmp_path / "catalog.db")
    plan = _plan_of(catalog, lambda: catalog.find_document("kb", "handbook.md"))
    assert any("documents_by_name" in step and "name=?" in step for step in plan), plan
    assert not any(step.startswith("SCAN") for step in plan), plan


def test_one_document_by_id_or_name_is_looked_up_not_listed(tmp_path):
    catalog = Catalog(tmp_path / "catalog.db")
    plan = _plan_of(catalog, lambda: catalog.documents("kb", ref="handbook.md"))
    assert not any(step.startswith("SCAN") for step in plan), plan
    assert any("name=?" in step for step in plan) and any("id=?" in step for step in plan), plan
