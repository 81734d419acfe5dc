"""One explanation per decision, in the question's language: what Chat's "Why", the Inspector's
header, its Scores tab and charts, and the why-not probe all say about a fallback decision.

``explain`` reads the decision record (``FallbackDecision.decided_by``, its score and threshold,
the absent-term rule's words, why it took its action) and the answerability verdict beside it.
It names the rule or threshold that decided first, and says of any other figure shown that it
did not decide. ``turn_explanation`` adds the answer: a refusal by the citation checks, after the
fallback let the question through, is explained as that.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag.answer import Answer, IssueCode, Outcome
from rag.retrieval.answerability import compared, decimals, is_chinese, refusing
from rag.retrieval.trace import ActionCause, Answerability, Decider, FallbackAction, FallbackDecision, Trace


@dataclass(frozen=True)
class Words:
    """The labels an explanation is shown under, in one language."""

    lang: str  # en | zh
    answered: str
    not_answered: str
    clarifying: str
    why: str  # written right before the explanation ("Why: ", "原因：")
    decision: str
    decided_by: str
    absent_terms: str
    probability: str
    best_rerank: str
    threshold: str
    rerank_threshold: str
    margin: str
    excluded_by: str
    citation_check: str
    citation_lead: str  # before the reason no drafted answer passed the citation checks
    answer_check: str  # the answerer, which found no evidence sentence that answers
    no_sentence_lead: str  # before the reason it found none (the closest sentence and what it lacks)
    deciders: dict[Decider, str]
    actions: dict[FallbackAction, str]

    def quote(self, terms: list[str]) -> str:
        return "、".join(f"“{t}”" for t in terms) if self.lang == "zh" else ", ".join(f"'{t}'" for t in terms)


_ACTIONS_EN = {
    FallbackAction.ANSWER: "answer",
    FallbackAction.RETRY_WIDER: "retry wider",
    FallbackAction.CLARIFY: "clarify",
    FallbackAction.REJECT: "reject",
}
_ACTIONS_ZH = {
    FallbackAction.ANSWER: "回答",
    FallbackAction.RETRY_WIDER: "扩大检索",
    FallbackAction.CLARIFY: "反问澄清",
    FallbackAction.REJECT: "拒答",
}
EN = Words(
    lang="en",
    answered="Answered",
    not_answered="Not answered",
    clarifying="Clarifying question",
    why="Why: ",
    decision="Decision",
    decided_by="Decided by",
    absent_terms="Absent terms",
    probability="P(answerable)",
    best_rerank="Best rerank score",
    threshold="Threshold",
    rerank_threshold="Rerank threshold",
    margin="Margin",
    excluded_by="Excluded by",
    citation_check="citation check",
    citation_lead="No drafted answer passed the citation checks: ",
    answer_check="answerer",
    no_sentence_lead="The answerer found no evidence sentence that answers it: ",
    deciders={
        Decider.NOTHING_RECALLED: "nothing recalled",
        Decider.ABSENT_TERMS: "absent-term rule",
        Decider.ANSWERABILITY: "answerability threshold",
        Decider.TOP_SCORE_RULE: "rerank threshold",
        Decider.RERANK_THRESHOLD: "rerank threshold",
        Decider.UNCALIBRATED: "no threshold (uncalibrated scores)",
    },
    actions=_ACTIONS_EN,
)
ZH = Words(
    lang="zh",
    answered="已回答",
    not_answered="未回答",
    clarifying="澄清问题",
    why="原因：",
    decision="决定",
    decided_by="决定依据",
    absent_terms="缺失的词",
    probability="可回答概率",
    best_rerank="最高重排分数",
    threshold="阈值",
    rerank_threshold="重排阈值",
    margin="差值",
    excluded_by="排除依据",
    citation_check="引用校验",
    citation_lead="没有一个回答草稿通过引用校验：",
    answer_check="答案器",
    no_sentence_lead="答案器在证据中找不到回答这个问题的句子：",
    deciders={
        Decider.NOTHING_RECALLED: "未检索到内容",
        Decider.ABSENT_TERMS: "缺词规则",
        Decider.ANSWERABILITY: "可回答性阈值",
        Decider.TOP_SCORE_RULE: "重排阈值",
        Decider.RERANK_THRESHOLD: "重排阈值",
        Decider.UNCALIBRATED: "未设阈值（分数未校准）",
    },
    actions=_ACTIONS_ZH,
)


def words_for(question: str) -> Words:
    """The labels in the question's language (Chinese for a Chinese question, else English)."""
    return ZH if is_chinese(question) else EN


@dataclass(frozen=True)
class Metric:
    label: str
    value: str


@dataclass(frozen=True)
class ChartLine:
    """A threshold drawn on the rerank-score chart: only the one that decided."""

    value: float
    label: str


@dataclass(frozen=True)
class OperatingPoint:
    """P(answerable) against the threshold it was compared with, when that comparison decided."""

    probability: float
    threshold: float
    label: str


@dataclass(frozen=True)
class Explanation:
    words: Words
    action: FallbackAction | None  # None: no decision recorded
    decided_by: Decider | None  # None: no decision recorded, or the citation checks refused
    rule: str  # what decided, in words ("absent-term rule")
    why: str  # the deciding comparison, then what followed from it
    details: tuple[str, ...] = ()  # other figures, each saying that it did not decide
    metrics: tuple[Metric, ...] = ()
    rerank_line: ChartLine | None = None
    operating_point: OperatingPoint | None = None
    exclusion: str = ""  # what the probe says kept the evidence out ('' when the question was answered)

    @property
    def why_line(self) -> str:
        """'Why: …' / '原因：…', as shown under a refusal."""
        return f"{self.words.why}{self.why}"


def explain(question: str, fb: FallbackDecision | None, a: Answerability | None) -> Explanation:
    """The explanation of decision ``fb`` (with the answerability verdict ``a``) for ``question``."""
    w = words_for(question)
    if fb is None:
        return Explanation(w, None, None, "", "")
    rule, veto = _decider(question, fb, a)
    head = _headline(w, rule, fb, veto)
    why = ("" if w.lang == "zh" else " ").join(s for s in (head, _missing(rule, fb, a), _cause(w, fb)) if s)
    return Explanation(
        words=w,
        action=fb.action,
        decided_by=rule,
        rule=w.deciders[rule],
        why=why,
        details=tuple(_details(w, rule, fb, a)),
        metrics=tuple(_metrics(w, rule, fb, veto)),
        rerank_line=_rerank_line(w, rule, fb),
        operating_point=_point(w, rule, fb),
        exclusion="" if fb.action is FallbackAction.ANSWER else _exclusion(w, rule, fb, veto),
    )


def explain_trace(trace: Trace) -> Explanation:
    return explain(trace.question, trace.fallback, trace.answerability)


def turn_explanation(answer: Answer, trace: Trace | None) -> Explanation:
    """What a turn's refusal or question back is explained by: the fallback decision, or (the
    fallback let it through) the citation checks that no draft passed."""
    fb = trace.fallback if trace is not None else None
    if fb is not None and not (answer.outcome is Outcome.REFUSAL and fb.action is FallbackAction.ANSWER):
        return explain(answer.question, fb, trace.answerability)
    w = words_for(answer.question)
    if answer.outcome is Outcome.ANSWER:
        return Explanation(w, None, None, "", "")
    checked = fb is not None
    if any(i.code is IssueCode.NO_ANSWER for i in answer.warnings):  # the answerer found no sentence
        lead, rule = w.no_sentence_lead, w.answer_check
    else:
        lead, rule = w.citation_lead, w.citation_check
    why = f"{lead}{answer.refusal_reason}" if checked else answer.refusal_reason
    return Explanation(w, FallbackAction.REJECT, None, rule if checked else "", why)


def outcome_label(w: Words, outcome: Outcome) -> str:
    return {Outcome.ANSWER: w.answered, Outcome.CLARIFY: w.clarifying, Outcome.REFUSAL: w.not_answered}[outcome]


@dataclass(frozen=True)
class TurnNote:
    """What Chat and the Inspector show above and under a refusal or a question back."""

    title: str  # 'Not answered' / '未回答', 'Clarifying question' / '澄清问题'
    why: str  # 'Why: …' / '原因：…'


def turn_note(answer: Answer, trace: Trace | None) -> TurnNote:
    """The title and the "Why" line of a turn that is not an answer, from its decision record."""
    ex = turn_explanation(answer, trace)
    return TurnNote(outcome_label(ex.words, answer.outcome), ex.why_line)


def _decider(question: str, fb: FallbackDecision, a: Answerability | None) -> tuple[Decider, list[str]]:
    """The recorded decider, or for a decision stored before it was recorded, the same reading
    of its verdict (``rag.retrieval.fallback.decider``)."""
    if fb.decided_by is not None:
        return fb.decided_by, list(fb.vetoed_terms)
    if fb.best_score is None:
        return Decider.NOTHING_RECALLED, []
    if a is None:
        return Decider.RERANK_THRESHOLD, []
    if a.threshold <= 0:
        return Decider.UNCALIBRATED, []
    veto = refusing(a, question)
    if veto:
        return Decider.ABSENT_TERMS, veto
    return (Decider.ANSWERABILITY if a.weights else Decider.TOP_SCORE_RULE), []


def _comparison(w: Words, rule: Decider, fb: FallbackDecision, veto: list[str]) -> str:
    """The deciding comparison in a few words ('' when no comparison was made)."""
    zh = w.lang == "zh"
    if rule is Decider.ABSENT_TERMS:
        terms = w.quote(veto)
        return f"检索范围内没有任何片段包含{terms}" if zh else f"{terms} in no searched chunk"
    if rule in (Decider.NOTHING_RECALLED, Decider.UNCALIBRATED) or fb.best_score is None:
        return ""
    name = w.probability if rule is Decider.ANSWERABILITY else w.best_rerank
    name = name if zh or rule is Decider.ANSWERABILITY else name.lower()
    return f"{name} {compared(fb.best_score, fb.threshold, '≥')}"


def _headline(w: Words, rule: Decider, fb: FallbackDecision, veto: list[str]) -> str:
    """One sentence naming what decided and its comparison."""
    zh = w.lang == "zh"
    if rule is Decider.NOTHING_RECALLED:
        return "没有检索到与这个问题相关的内容。" if zh else "Nothing was recalled for this question."
    if rule is Decider.UNCALIBRATED:
        return (
            "重排分数未经校准，没有应用阈值。"
            if zh
            else "The reranker's scores are not calibrated, so no threshold was applied."
        )
    said = _comparison(w, rule, fb, veto)
    if zh:
        return f"{w.deciders[rule]}：{said}。"
    return f"Decided by the {w.deciders[rule]}: {said}."


def _missing(rule: Decider, fb: FallbackDecision, a: Answerability | None) -> str:
    """What the verdict says was missing (already in the question's language); the absent-term
    comparison says it itself."""
    if a is None or fb.action is FallbackAction.ANSWER or rule is Decider.ABSENT_TERMS:
        return ""
    return a.missing


def _cause(w: Words, fb: FallbackDecision) -> str:
    zh, action = w.lang == "zh", w.actions[fb.action]
    said = {
        ActionCause.RETRIED: "扩大检索后仍然如此。" if zh else "Still so after a wider retry.",
        ActionCause.WIDEN: "将扩大检索一次。" if zh else "Recall is widened once.",
        ActionCause.VAGUE: "问题太含糊，难以准确检索。" if zh else f"The question is too vague to search well ({fb.cause_detail}).",
        ActionCause.POLICY: f"回退策略设为{action}。" if zh else f"The fallback policy is set to {action}.",
        ActionCause.LLM: f"由大模型选择{action}：{fb.cause_detail}" if zh else f"The LLM judge chose to {action}: {fb.cause_detail}",
    }  # fmt: skip
    return said.get(fb.cause, "") if fb.cause is not None else ""


def _details(w: Words, rule: Decider, fb: FallbackDecision, a: Answerability | None) -> list[str]:
    """The figures the Scores tab shows that did not decide, each saying so."""
    zh, out = w.lang == "zh", []
    if rule is Decider.ABSENT_TERMS and a is not None:
        ok = a.probability >= a.threshold
        comp = compared(a.probability, a.threshold, "≥")
        if zh:
            out.append(f"可回答概率 {comp} 不是决定因素：缺词规则无论分数如何都拒答。")
        elif ok:
            out.append(f"P(answerable) {comp} did not decide: the absent-term rule refuses whatever the score.")
        else:
            out.append(f"P(answerable) {comp} would have refused too; the absent-term rule decided first.")
    best = a.features.get("p_top") if a is not None and fb.best_score is not None else None
    if best is not None and rule in (Decider.ABSENT_TERMS, Decider.ANSWERABILITY):
        if zh:
            out.append(f"最高重排分数 {best:.3f} 不是决定因素：可回答性模型取代了重排阈值。")
        else:
            out.append(
                f"The best rerank score {best:.3f} did not decide: the answerability model replaces the rerank threshold."
            )
    return out


def _metrics(w: Words, rule: Decider, fb: FallbackDecision, veto: list[str]) -> list[Metric]:
    out = [Metric(w.decision, w.actions[fb.action]), Metric(w.decided_by, w.deciders[rule])]
    if rule is Decider.ABSENT_TERMS:
        return [*out, Metric(w.absent_terms, ", ".join(veto))]
    if rule in (Decider.NOTHING_RECALLED, Decider.UNCALIBRATED) or fb.best_score is None:
        return out
    answerability = rule is Decider.ANSWERABILITY
    score, thr = fb.best_score, fb.threshold
    places = decimals(score, thr)  # a score just under the threshold is not shown equal to it
    return [
        *out,
        Metric(w.probability if answerability else w.best_rerank, f"{score:.{places}f}"),
        Metric(w.threshold if answerability else w.rerank_threshold, f"{thr:.{places}f}"),
        Metric(w.margin, f"{score - thr:+.{places}f}"),
    ]


def _rerank_line(w: Words, rule: Decider, fb: FallbackDecision) -> ChartLine | None:
    if rule not in (Decider.TOP_SCORE_RULE, Decider.RERANK_THRESHOLD):
        return None
    return ChartLine(fb.threshold, f"{w.rerank_threshold} {fb.threshold:.2f}")


def _point(w: Words, rule: Decider, fb: FallbackDecision) -> OperatingPoint | None:
    if rule is not Decider.ANSWERABILITY or fb.best_score is None:
        return None
    places = decimals(fb.best_score, fb.threshold)
    label = f"{w.probability} {fb.best_score:.{places}f} · {w.threshold} {fb.threshold:.{places}f}"
    return OperatingPoint(fb.best_score, fb.threshold, label)


def _exclusion(w: Words, rule: Decider, fb: FallbackDecision, veto: list[str]) -> str:
    """'Excluded by the absent-term rule ('x' in no searched chunk): the question was not answered.'"""
    said = _comparison(w, rule, fb, veto)
    if w.lang == "zh":
        after = "问题被反问澄清" if fb.action is FallbackAction.CLARIFY else "问题没有得到回答"
        return f"{w.excluded_by}：{w.deciders[rule]}" + (f"（{said}）" if said else "") + f"，{after}。"
    after = "a question was asked back" if fb.action is FallbackAction.CLARIFY else "the question was not answered"
    return f"{w.excluded_by} the {w.deciders[rule]}" + (f" ({said})" if said else "") + f": {after}."
