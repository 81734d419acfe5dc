"""Parse [n] citations and validate every sentence of a draft against the evidence. Fail-closed.

Checks per sentence: each [n] names an evidence chunk; quoted text ("...") is in a cited
chunk; every number is in a cited chunk; the cited chunks support the sentence (support
score >= threshold, see ``support.py``). A sentence without citations passes only when it
states a gap ("The documents do not say ...") or is a short lead-in ending in ":".
When a sentence has citations in mid-sentence ("A [1], while B [2]."), each clause is
checked against the citations that follow it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.answer.result import AnswerSentence, Issue, IssueCode, SentenceKind
from rag.answer.sentences import CJK_RE, split_sentences
from rag.answer.support import W_EMBED, W_LEXICAL, EvidenceIndex, SupportScore
from rag.text import lexical

CITATION_RE = re.compile(r"(?<!\\)\[\s*(\d+(?:\s*[,，]\s*\d+)*)\s*\]")  # "\[3\]" is text, not a citation
_GROUP_GAP_RE = re.compile(r"^\s*$")
_QUOTE_RE = re.compile(r"\"([^\"]+)\"|“([^”]+)”|「([^」]+)」|『([^』]+)』")
_SOURCE_WORDS = r"(?:documents?|evidence|context|sources?|texts?|passages?|excerpts?|knowledge base|provided)"
_GAP_RE = re.compile(
    rf"\b{_SOURCE_WORDS}\b.{{0,60}}\b(?:do(?:es)? not|don't|doesn't|did not|cannot|can't|never)\b"
    rf"|\b(?:not|never) (?:mentioned|stated|specified|covered|given|provided|found|available)\b.{{0,40}}\b{_SOURCE_WORDS}\b"
    rf"|\bno (?:information|details?|mention|answer)\b.{{0,40}}\b{_SOURCE_WORDS}\b"
    rf"|\b(?:can't|cannot|can not|unable to)\b.{{0,40}}\b(?:answer|tell|determine|find)\b.{{0,40}}\b{_SOURCE_WORDS}\b"
    r"|(?:文档|文件|资料|证据|材料|上下文|知识库).{0,20}(?:没有|未|并未|不|无)(?:提及|提到|说明|包含|涉及|给出|记载|写明)"
    r"|无法(?:从|根据).{0,20}(?:回答|确定|得知)",
    re.I,
)
WEAK_CITATION_FACTOR = 0.5  # in "X [1][2]", a cited chunk scoring under half the threshold is a bad citation


def parse_citations(text: str) -> list[int]:
    """Citation numbers in order of first appearance: handles [1], [1, 2], [1][2], [1，2]."""
    seen: dict[int, None] = {}
    for match in CITATION_RE.finditer(text):
        for part in re.split(r"[,，]", match.group(1)):
            seen.setdefault(int(part), None)
    return list(seen)


def strip_citations(text: str) -> str:
    """``text`` without citation markers and without the spaces they leave before punctuation."""
    out = CITATION_RE.sub("", text)
    out = re.sub(r"[ \t]+([.,;:!?。，；：！？])", r"\1", out)
    out = out.replace("\\[", "[").replace("\\]", "]")  # escaped brackets are the source's own text
    return re.sub(r"[ \t]{2,}", " ", out).strip()


@dataclass
class Claim:
    text: str
    citations: list[int]


def split_claims(sentence: str) -> list[Claim]:
    """One claim per run of adjacent citation groups; trailing text joins the last claim."""
    groups = _merged_groups(sentence)
    if len(groups) <= 1:
        return [Claim(strip_citations(sentence), parse_citations(sentence))]
    claims: list[Claim] = []
    pending: list[int] = []  # citations before any text ("[1] A [2].") go with the next clause
    prev_end = 0
    for start, end in groups:
        text = strip_citations(sentence[prev_end:start]).lstrip(" ,;:，；：")
        cited = pending + parse_citations(sentence[start:end])
        has_words = bool(re.search(r"\w", text))
        pending = [] if has_words else cited
        if has_words:
            claims.append(Claim(text, list(dict.fromkeys(cited))))
        prev_end = end
    tail = strip_citations(sentence[prev_end:])
    if not claims:
        return [Claim(tail, pending)]
    claims[-1].citations = list(dict.fromkeys(claims[-1].citations + pending))
    if re.search(r"\w", tail):
        claims[-1].text = f"{claims[-1].text} {tail}".strip()
    return claims


def _merged_groups(sentence: str) -> list[tuple[int, int]]:
    groups: list[tuple[int, int]] = []
    for m in CITATION_RE.finditer(sentence):
        if groups and _GROUP_GAP_RE.match(sentence[groups[-1][1] : m.start()]):
            groups[-1] = (groups[-1][0], m.end())
        else:
            groups.append((m.start(), m.end()))
    return groups


def uncited_kind(text: str) -> SentenceKind:
    """GAP or CONNECTIVE when an uncited sentence may stand; CLAIM (a failure) otherwise."""
    if lexical.numbers(text) or _QUOTE_RE.search(text):
        return SentenceKind.CLAIM
    if _GAP_RE.search(text):
        return SentenceKind.GAP
    short = len(text.split()) <= 6 and len(CJK_RE.findall(text)) <= 12
    if short and (text.rstrip().endswith((":", "：")) or text.lstrip().startswith("#")):
        return SentenceKind.CONNECTIVE  # "In short:" or a Markdown heading line
    return SentenceKind.CLAIM


@dataclass
class SentenceCheck:
    sentence: AnswerSentence
    issues: list[Issue] = field(default_factory=list)
    best: dict[int, SupportScore] = field(default_factory=dict)  # best-scoring span per accepted [n]

    @property
    def ok(self) -> bool:
        return not self.issues


class CitationValidator:
    """Checks sentences of a draft against numbered evidence; ``threshold`` is the support cut."""

    def __init__(self, index: EvidenceIndex, threshold: float) -> None:
        self.index = index
        self.threshold = threshold

    def check_text(self, text: str) -> list[SentenceCheck]:
        return [self.check(seg.text) for seg in split_sentences(text, newline_breaks=True)]

    def check(self, raw: str) -> SentenceCheck:
        text = strip_citations(raw)
        cited = parse_citations(raw)
        sentence = AnswerSentence(text=text, raw=raw, citations=cited)
        check = SentenceCheck(sentence)
        if not cited:
            sentence.kind = uncited_kind(text)
            if sentence.kind is SentenceKind.CLAIM:
                check.issues.append(
                    Issue(IssueCode.UNCITED, "This sentence states something but cites no evidence.", raw)
                )
            return check
        supports = [self._check_claim(claim, raw, check) for claim in split_claims(raw)]
        sentence.support = round(min(supports), 4)
        sentence.verified = check.ok
        if not check.ok:
            check.best.clear()
        return check

    def _check_claim(self, claim: Claim, raw: str, check: SentenceCheck) -> float:
        valid = [n for n in claim.citations if 1 <= n <= len(self.index)]
        for n in claim.citations:
            if n not in valid:
                msg = f"[{n}] is not an evidence number (there are {len(self.index)})."
                check.issues.append(Issue(IssueCode.OUT_OF_RANGE, msg, raw, n))
        if not valid:
            return 0.0
        scores = {n: self.index.score(claim.text, n) for n in valid}
        check.issues.extend(self._quote_issues(claim.text, valid, raw))
        check.issues.extend(self._number_issues(claim.text, valid, raw))
        support = self._group_support(claim.text, scores)
        best_n = max(scores, key=lambda n: scores[n].similarity)
        if not scores[best_n].negation_ok:
            msg = f"The sentence and [{best_n}] disagree on a negation (one says 'not', the other doesn't)."
            check.issues.append(Issue(IssueCode.NEGATION_MISMATCH, msg, raw, best_n))
        check.issues.extend(self._support_issues(scores, support, raw))
        for n, s in scores.items():
            if n not in check.best or s.similarity > check.best[n].similarity:
                check.best[n] = s
        return support

    def _group_support(self, claim: str, scores: dict[int, SupportScore]) -> float:
        """Best single chunk, or the cited chunks together for a claim that spans them."""
        best = max(s.similarity for s in scores.values())
        if len(scores) == 1:
            return best
        spans = " ".join(self.index.chunks[n - 1].text[s.start : s.end] for n, s in scores.items())
        lex = lexical.coverage(lexical.content_tokens(claim), spans, lexical.content_tokens(spans))
        cosines = [s.cosine for s in scores.values() if s.cosine is not None]
        union = W_LEXICAL * lex + W_EMBED * max(cosines) if cosines else lex
        return max(best, union)

    def _support_issues(self, scores: dict[int, SupportScore], support: float, raw: str) -> list[Issue]:
        cited = ", ".join(f"[{n}]" for n in scores)
        if support < self.threshold:
            msg = f"{cited} does not support this sentence (support {support:.2f} < {self.threshold:.2f})."
            return [Issue(IssueCode.UNSUPPORTED, msg, raw, next(iter(scores)))]
        weak = self.threshold * WEAK_CITATION_FACTOR
        return [
            Issue(IssueCode.UNSUPPORTED, f"[{n}] does not support this sentence (support {s.similarity:.2f}).", raw, n)
            for n, s in scores.items()
            if len(scores) > 1 and s.similarity < weak
        ]

    def _quote_issues(self, claim: str, valid: list[int], raw: str) -> list[Issue]:
        issues = []
        chunks = [lexical.normalize(self.index.chunks[n - 1].text) for n in valid]
        for match in _QUOTE_RE.finditer(claim):
            quote = next(g for g in match.groups() if g is not None)
            pattern = re.compile(rf"(?<![a-z0-9]){re.escape(lexical.normalize(quote))}(?![a-z0-9])")
            if not any(pattern.search(chunk) for chunk in chunks):
                cited = ", ".join(f"[{n}]" for n in valid)
                msg = f'The quoted text "{quote}" does not appear in {cited}.'
                issues.append(Issue(IssueCode.QUOTE_NOT_FOUND, msg, raw, valid[0]))
        return issues

    def _number_issues(self, claim: str, valid: list[int], raw: str) -> list[Issue]:
        available: set[str] = set()
        for n in valid:
            available |= self.index.chunks[n - 1].numbers
        missing = sorted(lexical.numbers(claim) - available)
        if not missing:
            return []
        cited = ", ".join(f"[{n}]" for n in valid)
        msg = f"The number(s) {', '.join(missing)} do not appear in {cited}."
        return [Issue(IssueCode.NUMBER_MISMATCH, msg, raw, valid[0])]
