"""Coverage by meaning: a question term is covered where the documents hold it, another spelling
of it, or a synonym (WordNet for English, Cilin for Chinese); contractions and the most common
words are never question terms; everyday words never refuse on their own nor are named missing."""

from __future__ import annotations

import pytest

from rag.records import TermStats
from rag.retrieval.answerability import EvidenceChunk, features, vetoing
from rag.retrieval.answerability.terms import held_terms, present_synonyms, question_terms, synonym_tokens
from rag.text.frequency import is_everyday
from rag.text.synonyms import CILIN_LABEL, WORDNET_LABEL, synonyms


def spellings(word: str) -> set[str]:
    return {s.spelling for s in synonyms(word)}


def test_wordnet_gives_the_everyday_sense():
    assert "holiday" in spellings("vacation") and spellings("Vacations") == spellings("vacation")
    assert {"cab", "taxicab"} <= spellings("taxi")
    assert "word" not in spellings("password")  # a generic, far more common synonym is left out
    assert "vomit" not in spellings("sick")  # a part of speech the tagged corpus never saw is left out
    assert synonyms("vacation")[0].source == WORDNET_LABEL


def test_an_english_word_takes_its_own_lemmas_synonyms_not_every_word_sharing_its_stem():
    # "relatives", "relation" and "relate" are all the BM25 stem "relat"; "vacate" shares "vacation"'s
    assert "congener" in spellings("relatives") and not spellings("relatives") & {"coitus", "connect", "associate"}
    assert "renounce" not in spellings("vacation") and not spellings("severity") & {"rupture", "rift"}
    assert spellings("day's") == spellings("days") == spellings("day")  # WordNet's suffix rules
    assert "utilize" in spellings("applied") and {"switch", "swop"} <= spellings("swapping")  # its exception lists
    assert spellings("corporate") == set()  # a form of no lemma the table holds: none ("corporation" has some)
    assert {"aid", "portion"} <= spellings("helping")  # the verb "help" and the noun "helping"
    # no suffix rule reads a word as an abbreviation's lemma or an adjective's comparative
    assert "thursday" not in spellings("thing") and spellings("per") == set()  # "th", "p"
    assert not spellings("carer") & {"car", "automobile"}  # "-er" read as a comparative
    # a handbook that says "connect" does not hold the question's "relatives"
    assert present_synonyms({"relat": "relatives"}, TermStats(10, {"connect": 1})) == {}
    assert "vacat" in present_synonyms({"vacat": "vacation"}, TermStats(10, {"holiday": 1}))


def test_cilin_gives_chinese_synonyms_matched_as_substrings():
    found = {s.spelling: s for s in synonyms("伙食")}
    assert "餐饮" in found and found["餐饮"].source == CILIN_LABEL
    assert found["餐饮"].held_by("无需提供餐饮发票", set())
    assert synonyms("不存在的词语") == ()


def test_contraction_tails_and_grammar_words_are_not_terms():
    terms = question_terms("I've been here six years, how much sabbatical leave am I entitled to?")
    assert set(terms.values()) == {"six", "sabbatical", "leave", "entitled"}  # no 've', 'here', 'am'
    assert "m" not in question_terms("I'm off sick, doesn't my manager need a note?").values()
    # a negation whose stem changes leaves no stub ("ca", "wo") to be named as missing
    assert set(question_terms("My laptop won't boot and I can't log in").values()) == {"laptop", "boot", "log"}
    assert set(question_terms("Shan’t I get the deposit back?").values()) == {"deposit"}


def test_everyday_words_never_veto_but_rare_ones_do():
    assert is_everyday("money") and is_everyday("entitled") and not is_everyday("sabbatical")
    assert vetoing(("money", "entitled", "sabbatical"), "latin") == ["sabbatical"]


def test_the_absent_word_is_a_feature_and_refuses_on_its_own_only_for_a_model_that_does_not_weigh_it():
    stats = TermStats(10, {"week": 1, "year": 1, "ten": 1})
    chunk = EvidenceChunk("Employees get 25 days of paid holiday each year, ten more after ten years.", 0.9, 1, 1)
    read = features("How many weeks of sabbatical do I get after ten years?", [chunk], stats)
    assert read.absent == ("sabbatical",) and read.x["absent_word"] == 1.0
    assert features("How many days a year?", [chunk], TermStats(10, {"day": 1, "year": 1})).x["absent_word"] == 0.0
    assert vetoing(read.absent, "latin") == ["sabbatical"]  # the plain model: the rule refuses
    assert vetoing(read.absent, "latin", weighed=("p_top", "absent_word", "reader")) == []  # the twin weighs it
    assert vetoing(read.absent, "cjk") == []  # no rule for CJK: jieba's cuts make absence unreliable


TEXT = "Employees receive 25 days of paid holiday per calendar year."


def test_a_synonym_present_in_the_scope_covers_the_term_and_is_reported():
    question = "How many vacation days do I get per year?"
    surface = question_terms(question)
    df = {"day": 1, "per": 1, "calendar": 1, "holiday": 1, "paid": 1}
    tokens = synonym_tokens(question)
    assert "holiday" in tokens
    stats = TermStats(10, {**{t: df.get(t, 0) for t in tokens}, **{t: df.get(t, 0) for t in surface}})
    others = present_synonyms(surface, stats)
    assert [s.spelling for s in others["vacat"]] == ["holiday"]
    assert held_terms(surface, TEXT, None, others) >= {"vacat", "day"}
    read = features(question, [EvidenceChunk(TEXT, 0.9, 1, 1)], stats)
    assert read.absent == () and read.x["missing_share"] == 0.0 and read.x["cover_sentence"] == pytest.approx(1.0)
    match = {m.term: m for m in read.matches}["vacation"]
    assert match.found == "synonym" and "holiday (WordNet 3.0)" in match.via and match.in_best_sentence


def test_without_the_synonym_the_term_stays_absent():
    question = "How many vacation days do I get per year?"
    stats = TermStats(10, {"day": 1, "per": 1})
    read = features(question, [EvidenceChunk("Employees receive 25 days per calendar year.", 0.9, 1, 1)], stats)
    assert read.absent == ("vacation",)
    assert {m.term: m.found for m in read.matches}["vacation"] == "absent"


HANDBOOK = {
    "leave.md": "# Leave\n\nFull-time employees get 25 days of paid holiday each year, booked in PeopleHub. "
    "Up to 5 unused days carry over to the next year.",
    "travel.md": "# Travel\n\nEconomy class is required for flights under six hours. Hotels are capped at 180 EUR a night.",
}


@pytest.fixture()
def handbook(make_kb):
    from rag.ingest.pipeline import UploadItem

    kb = make_kb("meaning")
    assert all(r.ok for r in kb.ingest([UploadItem(n, t.encode()) for n, t in HANDBOOK.items()]))
    return kb


def test_a_question_in_other_words_is_answered_at_the_default_thresholds(handbook):
    from rag.retrieval.pipeline import retrieve
    from rag.retrieval.trace import FallbackAction

    t = retrieve(handbook, "How many vacation days do I get?")
    assert t.fallback.action is FallbackAction.ANSWER, t.fallback.reason
    assert {m.term: m.found for m in t.answerability.term_matches}["vacation"] == "synonym"
    assert t.evidence()[0].doc_name == "leave.md"


def test_a_same_topic_question_the_documents_do_not_answer_is_refused_naming_the_term(handbook):
    from rag.retrieval.pipeline import retrieve
    from rag.retrieval.trace import FallbackAction

    t = retrieve(handbook, "How many weeks of sabbatical do I get after ten years?")
    assert t.fallback.action is FallbackAction.REJECT
    assert "'sabbatical'" in t.answerability.missing


def test_the_inspector_table_says_how_each_term_was_found():
    from rag.retrieval.trace import Answerability, TermMatch
    from rag.views.meaning import term_match_frame

    a = Answerability(
        "m", "latin", {}, {}, {}, 0.0, 0.9, 0.5, True, "number", [], [], "", "",
        term_matches=[TermMatch("vacation", "synonym", "holiday (WordNet 3.0)", True), TermMatch("sabbatical", "absent")],
    )  # fmt: skip
    df = term_match_frame(a)
    assert df.to_dict("records") == [
        {"term": "vacation", "found": "as a synonym", "via": "holiday (WordNet 3.0)", "in best sentence": "✓"},
        {"term": "sabbatical", "found": "not at all", "via": "—", "in best sentence": "—"},
    ]


def test_phrases_stay_inside_a_clause_and_skip_the_most_common_words():
    from rag.retrieval.answerability.phrases import phrases

    got = phrases(["You may take 5 days of bereavement leave for a partner, child, parent or sibling."])
    assert "bereavement leave" in got and "child" in got
    assert "child parent" not in got and "you may" not in got


def test_a_unit_abbreviation_is_a_phrase_that_can_cover_the_unit_in_words(embedder):
    from rag.retrieval.answerability.phrases import close_phrases, phrases

    evidence = ["Economy fares include one checked bag of up to 23 kg."]
    assert "kg" in phrases(evidence) and "of" not in phrases(evidence)
    found = close_phrases({"kilo": "kilos"}, evidence, embedder.embed_texts)
    assert found["kilo"].phrase == "kg"


def test_close_phrases_cover_a_term_in_other_words_but_not_a_look_alike(embedder):
    from rag.retrieval.answerability.phrases import CLOSE_PHRASE_MIN, close_phrases

    evidence = ["A medical certificate is required for absences of more than 3 days.", "Annual leave is 25 days."]
    found = close_phrases({"doctor": "doctor's", "sabbat": "sabbatical"}, evidence, embedder.embed_texts)
    assert "doctor" in found and found["doctor"].phrase.startswith("medical")
    assert found["doctor"].cosine >= CLOSE_PHRASE_MIN
    assert "sabbat" not in found  # "annual leave" is another kind of leave, not a sabbatical


def test_the_term_table_speaks_chinese_for_a_chinese_question():
    from rag.retrieval.trace import Answerability, TermMatch
    from rag.views.meaning import term_match_frame

    a = Answerability(
        "m", "cjk", {}, {}, {}, 0.0, 0.9, 0.5, True, "number", [], [], "", "",
        term_matches=[TermMatch("伙食", "synonym", "餐饮 (Tongyici Cilin (extended))", True), TermMatch("打车", "absent")],
    )  # fmt: skip
    assert list(term_match_frame(a, chinese=True)["found"]) == ["同义词", "没有找到"]


def test_an_amount_in_a_rules_range_is_found_there_and_never_named_missing(make_kb):
    """A real knowledge base at the default settings: "六百块的办公用品" against "单价超过 500 元的物品":
    the Inspector's term table says the amount was found in the rule's range, and whatever the
    decision, the refusal never names the amount as what the documents lack."""
    from rag.ingest.pipeline import UploadItem
    from rag.retrieval.pipeline import retrieve
    from rag.views.meaning import term_match_frame

    kb = make_kb("amounts")
    text = "# 办公用品\n\n办公用品由行政部统一采购。个人申请采购单价超过 500 元的物品，须事先提交采购申请。"
    assert all(r.ok for r in kb.ingest([UploadItem("office.md", text.encode())]))
    t = retrieve(kb, "自己买一件六百块的办公用品之前要做什么？")
    found = {m.term: m.found for m in t.answerability.term_matches}
    assert found["六百块"] == "range", found
    assert "六百块" not in (t.answerability.missing or "")
    rows = term_match_frame(t.answerability, chinese=True).to_dict("records")
    assert {r["term"]: r["found"] for r in rows}["六百块"] == "在规定的范围内（金额、时长或数量）"


LEAVE = (
    "# Leave\n\n## Annual leave\n\nFull-time employees receive 25 working days of paid annual leave per calendar year. "
    "After five years of continuous service the allowance rises to 27 working days. "
    "Up to 5 unused days of annual leave may be carried over into the next calendar year.\n\n"
    "## Sick leave\n\nEmployees receive 10 days of paid sick leave per calendar year. A medical certificate is "
    "required for absences of more than 3 consecutive working days.\n"
)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("I've been here six years, how many days of annual leave do I get?", "27 working days"),
        ("I've been off sick for four days, do I need a doctor's note?", "medical certificate"),
    ],
)
def test_a_duration_the_question_states_is_held_by_the_rule_whose_range_holds_it(
    make_kb, monkeypatch, question, answer
):
    """A real knowledge base at the default settings: the user's own situation ("six years",
    "four days") picks the rule for it ("after five years", "more than 3 consecutive working days")
    over the sentences that share more of the question's other words; without the rule
    (``quantity-ranges`` off) it does not."""
    from rag.ask import ask
    from rag.ingest.pipeline import UploadItem

    kb = make_kb("quantities")
    assert kb.ingest([UploadItem("leave.md", LEAVE.encode())])[0].ok
    turn, _ = ask(kb, question, persist=False)
    assert not turn.answer.refused and answer in turn.answer.text, turn.answer.text
    monkeypatch.setenv("RAG_RULES_OFF", "quantity-ranges")
    turn, _ = ask(kb, question, persist=False)
    assert answer not in turn.answer.text, turn.answer.text
