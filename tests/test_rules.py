"""The rule switches an ablation asks with (``rag.rules``, ``RAG_RULES_OFF``): each turns its
rule off and nothing else, and an unknown name is refused before anything is asked."""

from __future__ import annotations

import pytest

from rag import rules
from rag.answer.question import missing_names, question_parts
from rag.answer.scoring import OUT_OF_RANGE_FACTOR, _answer_like, _fit
from rag.config import Settings
from rag.errors import ConfigError
from rag.records import TermStats
from rag.retrieval.answerability import EvidenceChunk, assess
from rag.retrieval.answerability.messages import absent_words
from rag.retrieval.answerability.model import AnswerabilityModel
from rag.retrieval.answerability.terms import present_synonyms
from rag.text.question import analyse
from rag.text.terms import question_terms


def _off(monkeypatch, *names: str) -> None:
    monkeypatch.setenv(rules.ENV, ",".join(names))


def test_every_rule_is_on_by_default_and_an_unknown_name_is_refused(monkeypatch):
    monkeypatch.delenv(rules.ENV, raising=False)
    assert rules.off() == frozenset() and all(rules.on(n) for n in rules.RULES)
    with pytest.raises(ValueError, match="unknown rule"):
        rules.on("no-such-rule")
    _off(monkeypatch, "frames", "nope")
    with pytest.raises(ConfigError, match="nope") as err:
        Settings.from_env()
    assert "frames" in err.value.fix  # names the rules it knows


def test_a_rule_off_changes_the_fingerprint(monkeypatch):
    monkeypatch.delenv(rules.ENV, raising=False)
    plain = Settings.from_env()
    _off(monkeypatch, "synonyms")
    off = Settings.from_env()
    assert off.rules_off == "synonyms" and off.fingerprint() != plain.fingerprint()
    with pytest.raises(ConfigError, match="differs from RAG_RULES_OFF"):  # the rules would not see it
        Settings.from_env(rules_off="frames")


@pytest.mark.parametrize(
    ("question", "rule", "comes_back"),
    [
        ("哪些地区的政策有变化？", "categories", "地区"),  # the category after 哪些
        ("Which regions does the policy cover?", "categories", "region"),
        ("该公司大约有多少员工？", "hedges", "大约"),
        ("法规一共有几项规定？", "frames", "几项"),
        ("费用产生以后要在几天之内提交报销？", "relations", "以后"),
        ("早上最晚几点到公司？", "asked-units", "几点"),
        ("Can I work from here on Fridays?", "grammar-words", "here"),
    ],
)
def test_a_term_shaping_rule_off_gives_its_word_back_as_a_term(monkeypatch, question, rule, comes_back):
    monkeypatch.delenv(rules.ENV, raising=False)
    assert comes_back not in question_terms(question)
    before = analyse(question).terms
    _off(monkeypatch, rule)
    assert comes_back in question_terms(question)  # the cache is keyed on the rules off
    assert comes_back in analyse(question).terms and comes_back not in before
    monkeypatch.delenv(rules.ENV)
    assert comes_back not in question_terms(question)


def test_everyday_words_off_lets_an_everyday_word_refuse(monkeypatch):
    monkeypatch.delenv(rules.ENV, raising=False)
    question = "How much money do I get for a dinner?"
    assert absent_words(["money"], question) == []
    _off(monkeypatch, "everyday-words")
    assert absent_words(["money"], question) == ["money"]


def test_synonyms_off_leaves_a_synonym_uncovered(monkeypatch):
    monkeypatch.delenv(rules.ENV, raising=False)
    question = "How many vacation days do employees get?"
    stats = TermStats(10, {"day": 2, "employe": 5, "holiday": 2})
    terms = question_terms(question)
    assert "vacat" in present_synonyms(terms, stats)
    chunks = [EvidenceChunk("Employees get 25 holiday days a year.", 0.9, 1, 1)]
    model = AnswerabilityModel("test", ("p_top",), (4.0,), -2.0)
    assert assess(question, chunks, stats, "latin", 0.5, 0.59, model=model).answerable
    _off(monkeypatch, "synonyms")
    assert present_synonyms(terms, stats) == {}
    refused = assess(question, chunks, stats, "latin", 0.5, 0.59, model=model)
    assert not refused.answerable and refused.missing == "The documents don't mention 'vacation'."


def test_answer_stage_rules_off(monkeypatch):
    monkeypatch.delenv(rules.ENV, raising=False)
    headline = "2022北京冬奥会开幕式总导演是谁？"
    lead_in = "Daily meal allowances for the city tier:"
    (part,) = question_parts("What changed in Contoso 6.0 in 2022?")
    assert not _answer_like(headline) and not _answer_like(lead_in)
    assert missing_names(part, "release notes for 5.0") == ["Contoso", "6.0"]
    _off(monkeypatch, "question-sentences")
    assert _answer_like(headline) and not _answer_like(lead_in)
    _off(monkeypatch, "lead-ins", "missing-names")
    assert _answer_like(lead_in)
    assert missing_names(part, "release notes for 5.0") == []


def test_out_of_range_off_keeps_a_rule_for_another_range(monkeypatch):
    monkeypatch.delenv(rules.ENV, raising=False)
    (part,) = question_parts("Who approves a USD 8,000 claim?")
    body = "Claims up to USD 2,500 are approved by the line manager."
    assert _fit(part, body)[0] == OUT_OF_RANGE_FACTOR
    _off(monkeypatch, "out-of-range")
    assert _fit(part, body)[0] == 1.0
