"""Why the extractive answerer left a part of the question unanswered, in the part's language:
what a refusal by the answerer says (``Gap.why``). A name the evidence never mentions, the closest
sentence and what it lacks (the asked thing's terms first, or the figure asked for), or the best
sentence's score under the floor an answer needs."""

from __future__ import annotations

from rag.answer.picks import Pick, list_body
from rag.answer.question import QuestionPart
from rag.text import lexical
from rag.text.frames import known_word

QUOTE_CHARS = 80  # a sentence named in a reason is cut to this many characters
MAX_LACKS = 4  # and at most this many of the terms it lacks are named


def _quoted(pick: Pick) -> str:
    text = " ".join(list_body(pick.segment.text).split())
    text = text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rstrip() + "…"
    return f"[{pick.n}] “{text}”"


def _terms(part: QuestionPart, terms) -> str:
    return "、".join(f"“{t}”" for t in terms) if part.cjk else ", ".join(f"'{t}'" for t in terms)


def unnamed(part: QuestionPart, names: list[str]) -> str:
    if part.cjk:
        return f"证据中没有提到{_terms(part, names)}"
    return f"the evidence never names {_terms(part, names)}"


def uncarried(part: QuestionPart, closest: Pick | None) -> str:
    """No sentence carries what the part asks for: the closest one, and what it lacks (the asked
    thing's terms first, or the figure it asks for)."""
    if closest is None:
        return "证据中没有能单独回答的句子" if part.cjk else "no evidence sentence states anything on its own"
    others = sorted(part.tokens - part.asked.head - closest.terms)
    if part.cjk:  # a Chinese part's tokens are its character pairs: name those that are words
        others = [t for t in others if known_word(t)]
    lacks = (sorted(part.asked.head - closest.terms) + others)[:MAX_LACKS]
    figure = (part.wants_figure or part.wants_date) and not lexical.numbers(list_body(closest.segment.text))
    if part.cjk:
        what = "没有给出所问的数字" if figure or not lacks else f"缺少{_terms(part, lacks)}"
        return f"没有句子包含问题所问的内容：最接近的是 {_quoted(closest)}，{what}"
    what = "gives no figure" if figure or not lacks else f"lacks {_terms(part, lacks)}"
    return f"no sentence holds what it asks for: the closest, {_quoted(closest)}, {what}"


def short(part: QuestionPart, best: Pick, judged: float, needed: float, by_meaning: bool) -> str:
    """The best sentence carries what is asked but is judged (``judged``) under what an answer needs."""
    if part.cjk:
        how = "得分与意思相近度的加权和" if by_meaning else "得分"
        return f"最好的句子 {_quoted(best)} 的{how}为 {judged:.3f}，低于回答所需的 {needed:.3f}"
    return f"the best sentence, {_quoted(best)}, scores {judged:.3f}, under the {needed:.3f} an answer needs"
