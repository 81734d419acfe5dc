"""What a question part asks for: the kind of answer, and the word that names the asked thing.

A sentence can hold most of a question's topic words and still not answer it: "What is the
Wi-Fi password in the Dublin office?" against "The Dublin office car park has 40 spaces." The
question's terms are not equally salient. The asked thing (the attribute of "what is the X",
"who is the X", "X是什么" / "X怎么…"; the verb of "who VERB", the verb beside "谁") says what
the answer is about; the other terms set its scope. The terms a sentence holds (its own words,
a list's lead-in, its heading) are weighed by that salience: the head as much as all scope
terms together. A sentence answers the part only when it *carries* the asked thing, holding
over half of that weight: the head, or the figure or date the part asks for ("What is the
hotel cap in Dublin?" / "Tier B cities (…, Dublin): USD 230 per night."), or the name an English "who"
part asks for (``rag.answer.scoring``: "need approval from the Chief Financial Officer" answers
"Who has to sign off …?"), and some of the
scope ("Passwords must be at least 14 characters long." holds the head of "the Wi-Fi password
in the Dublin office" and nothing of its scope). A part without such a head is left to term
coverage: "When may ...", "How long ...", and "which X" / "什么X" / "哪些X", whose X is a type
the answer names an instance of ("Portugal and Spain"), rarely the type word itself. A head
that only frames the question ("What is the *process* for booking travel") hands over to the
phrase it governs ("travel").

A yes/no part ("Do I need receipts for meals?", "需要提供发票吗？") is answered by the sentence
that says yes or no about the asked predicate, in its own words: for it a list's lead-in
("…，无需提供餐饮发票：") states the answer, and the items below it do not inherit its terms.

All by rule over the question's words, never by a model, and no rule names a domain word.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from rag.text.script import HAN

# over half: the asked thing and some of its scope ("password" alone is no "Dublin Wi-Fi password")
MIN_ASKED_SHARE = 0.5


class AnswerKind(StrEnum):
    THING = "thing"  # "what is the X", "which X", "who ...", "X是什么": the sentence must carry X
    YES_NO = "yes_no"  # "Do I ...?", "…吗？": the sentence that says yes or no about it
    OPEN = "open"  # no asked thing found by rule: term coverage decides


@dataclass(frozen=True)
class Asked:
    kind: AnswerKind
    head: frozenset[str] = frozenset()  # content tokens naming the asked thing; any one carries it


_EN_AUX = "do does did is are was were am be been can could may might must shall should will would has have had"
_EN_STOP = frozenset(
    f"""{_EN_AUX} of in on at for from to with by per since during before after between about under over
    above below within without into than that which who whom whose when where while if and or but as such
    i you we they he she it there""".split()
)
_EN_SKIP = frozenset("is are was were 's be will the a an its their our your my his her this these those".split())
_EN_MODAL = frozenset(f"{_EN_AUX} to need needs allowed able required supposed going".split())
_LIGHT_HEADS = frozenset(
    """name process procedure policy policies rule rules way ways step steps requirement requirements purpose
    status type kind list details detail information""".split()
)
_COPULAS = frozenset("is are was were".split())
_GOVERNS = frozenset("of for on about regarding".split())
_EN_WORD_RE = re.compile(r"[a-z0-9]+(?:['’-][a-z0-9]+)*")
_WH_IS_RE = re.compile(r"\b(what|which|who)'s\b")  # "who's the site lead": "who is the site lead"
_EN_YES_NO_RE = re.compile(rf"^\s*(?:{'|'.join(_EN_AUX.split())})\b", re.I)
_ZH_YES_NO_RE = re.compile(r"(?:吗|么)[？?。]?\s*$|是否|能否|可否|是不是|能不能|可不可以|需不需要|要不要|有没有")
_ZH_ASK = r"(?:是|为|有)?(?:什么|怎么|怎样|如何|哪些|哪个|哪里|哪儿)"
_ZH_BEFORE_ASK_RE = re.compile(rf"(?P<np>[^的，,；;。？?\s]{{2,}}?){_ZH_ASK}")
_ZH_TYPE_RE = re.compile(rf"(?:什么|哪些|哪个|哪种|哪类)[{HAN}]{{2,}}")  # "哪些地区": a type, see _en_head
_ZH_WHO = r"(?:谁|哪些人|哪位|什么人)"
# after 谁 a modal or light verb comes before the asked verb ("谁来审批", "谁可以批准"), as "who has to" in English
_ZH_WHO_MODAL = r"(?:来|去|会|能|可以|可|要|需要|应该|应|该|得|必须|负责)"
_ZH_WHO_AFTER_RE = re.compile(rf"{_ZH_WHO}{_ZH_WHO_MODAL}?(?P<verb>[^，,；;。？?\s]{{1,2}})")  # "需要谁审批": 审批
_ZH_WHO_BEFORE_RE = re.compile(rf"(?P<verb>[^，,；;。？?\s的是]{{2}}){_ZH_WHO}")  # "应该联系谁": 联系
_ZH_TRAILING = re.compile(r"(?:的|了|呢|呀|啊|[？?。])+$")


Terms = Callable[[str], frozenset[str]]


def asked_for(text: str, cjk: bool, terms: Terms) -> Asked:
    """The kind of answer ``text`` (one question part) asks for, and its head terms as ``terms``
    (the part's own content-token rule) gives them."""
    if (_ZH_YES_NO_RE if cjk else _EN_YES_NO_RE).search(text):
        return Asked(AnswerKind.YES_NO)
    phrase = head_phrase(text, cjk)
    head = terms(phrase) if phrase else frozenset()
    return Asked(AnswerKind.THING, head) if head else Asked(AnswerKind.OPEN)


def head_phrase(text: str, cjk: bool) -> str | None:
    """The words naming the asked thing of ``text`` (one question part), None for a yes/no part
    or where no rule finds one."""
    if (_ZH_YES_NO_RE if cjk else _EN_YES_NO_RE).search(text):
        return None
    return _zh_head(text) if cjk else _en_head(text)


def asked_share(asked: Asked, tokens: frozenset[str], held: frozenset[str], gives_figure: bool) -> float:
    """The salience-weighted share of the part's terms (``tokens``) a sentence holds (``held``):
    the asked thing weighs as much as all its scope terms together, and a figure or date given
    where the part asks for one (``gives_figure``) stands for it. 1.0 when no head was found."""
    if not asked.head:
        return 1.0
    scope = tokens - asked.head
    weight = max(len(scope), 1)
    asked_held = bool(asked.head & held) or gives_figure
    return (weight * asked_held + len(scope & held)) / (weight + len(scope))


def carries(asked: Asked, tokens: frozenset[str], held: frozenset[str], gives_figure: bool) -> bool:
    """A sentence carries what is asked when it holds more than half of the weighted terms: the
    asked thing (or the figure asked for) and, where the part names a scope, some of it."""
    return asked_share(asked, tokens, held, gives_figure) > MIN_ASKED_SHARE


def _en_head(text: str) -> str | None:
    """The attribute of "what is the X ..." / "who is the X ...", the verb of "who VERB ...";
    none for "which X" / "what X": X names a type, and the answer names one of its kind
    ("In which regions ..." / "Portugal and Spain"), rarely the type itself."""
    words = _EN_WORD_RE.findall(_WH_IS_RE.sub(r"\1 is", text.casefold().replace("’", "'")))
    for i, w in enumerate(words):
        copula = i + 1 < len(words) and words[i + 1] in _COPULAS
        if w in ("what", "which", "who") and copula:
            return _en_phrase_head(words, i + 1)
        if w in ("what", "which"):
            return None
        if w == "who":
            return next((v for v in words[i + 1 :] if v not in _EN_MODAL), None)
    return None


def _en_phrase_head(words: list[str], i: int) -> str | None:
    """The last word of the noun phrase starting at ``words[i]`` (after copulas and articles);
    a light head ("process of ...") hands over to the phrase it governs. The phrase ends at a
    function word, or at a verb in the -s form ("Which insurance provider *covers* staff?"): a
    word in -s after the phrase's first word, followed by one that is no function word."""
    while i < len(words) and words[i] in _EN_SKIP:
        i += 1
    j = i
    while j < len(words) and words[j] not in _EN_STOP and not (j > i and _verb_like(words, j)):
        j += 1
    if j == i:
        return None
    head = words[j - 1].removesuffix("'s").rstrip("'")
    if head in _LIGHT_HEADS:
        return _en_phrase_head(words, j + 1) if j < len(words) and words[j] in _GOVERNS else None
    return head


def _verb_like(words: list[str], j: int) -> bool:
    w = words[j]
    return w.endswith("s") and not w.endswith(("ss", "'s")) and j + 1 < len(words) and words[j + 1] not in _EN_STOP


def _zh_head(text: str) -> str | None:
    """The verb beside 谁, none for a type ("什么颜色", "哪些地区"), else the phrase just before
    是什么 / 怎么 / 如何."""
    text = _ZH_TRAILING.sub("", text.strip())
    who = _ZH_WHO_AFTER_RE.search(text) or _ZH_WHO_BEFORE_RE.search(text)
    if who:
        return who["verb"]
    if _ZH_TYPE_RE.search(text):
        return None
    found = [m["np"] for m in _ZH_BEFORE_ASK_RE.finditer(text)]
    return found[-1] if found else None
