"""What to do when the evidence is weak: answer, retry wider, ask back, or refuse.

Evidence is weak when nothing was recalled or the best rerank score is under
``rerank_threshold`` (only for rerankers whose scores are calibrated). Then:
- ``retry_wider``: recall_k doubled, once (first attempt only, and only if something was recalled);
- ``clarify``: the question is too vague to search well: a question goes back to the user;
- ``reject``: the fixed refusal text.
Policy ``auto`` uses these rules, or an LLM's JSON verdict when one is configured (bad output
falls back to the rules). Every decision carries its reason and the score and threshold compared.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from rag.retrieval.answerability import compared, is_chinese, refusing
from rag.retrieval.rewrite import LLM_ERRORS, ask_json
from rag.retrieval.trace import ActionCause, Answerability, Decider, FallbackAction, FallbackDecision
from rag.store.tokenize import tokenize

log = logging.getLogger(__name__)

REFUSAL_TEXT = (
    "I can't find enough support for this in the knowledge base, so I won't answer it. "
    "Try rephrasing it, or add the documents that cover it."
)
REFUSAL_TEXT_ZH = "知识库里没有足够的依据回答这个问题，所以不作回答。可以换个说法，或添加涵盖这方面内容的文档。"


def refusal_text(question: str) -> str:
    """The fixed refusal in the question's language (Chinese for a Chinese question, else English)."""
    return REFUSAL_TEXT_ZH if is_chinese(question) else REFUSAL_TEXT


_DEICTIC = re.compile(r"\b(it|this|that|these|those|they|them|he|she|there|above|same)\b|这个|那个|它|他们", re.I)
MIN_CONTENT_TOKENS = 2  # fewer content words than this is too vague to search
DEICTIC_CONTENT_TOKENS = 4  # a pronoun without a named subject and fewer content words than this


@dataclass(frozen=True)
class Evidence:
    """What the decision looks at."""

    question: str
    best_score: float | None
    threshold: float
    calibrated: bool
    recalled: int  # candidates recalled (after filters)
    attempt: int  # 1, or 2 after retry_wider
    answerability: Answerability | None = None  # the answerability stage's verdict, when it ran


def is_weak(ev: Evidence) -> bool:
    if ev.recalled == 0 or ev.best_score is None:
        return True
    if ev.answerability is not None:
        return not ev.answerability.answerable
    return ev.calibrated and ev.best_score < ev.threshold


def vagueness(question: str) -> str:
    """Why the question is too vague to search, or '' when it is specific enough."""
    content = tokenize(question)
    if len(content) < MIN_CONTENT_TOKENS:
        return f"only {len(content)} content word(s)"
    if _DEICTIC.search(question) and len(content) < DEICTIC_CONTENT_TOKENS:
        return "refers to something ('it', 'this', ...) without naming it"
    return ""


def clarify_message(question: str) -> str:
    """The question back, in the question's language."""
    if is_chinese(question):
        return (
            f"能说得更具体一些吗？“{question.strip()}”太短，很难准确匹配文档。"
            "请说明想了解什么，涉及哪份文档、哪个产品或哪个时期。"
        )
    return (
        f'Could you be more specific? "{question.strip()}" is too short to match the documents well. '
        "Say what you want to know, and about which document, product or period."
    )


def decider(ev: Evidence) -> tuple[Decider, list[str]]:
    """The rule or threshold that decides for ``ev``, and the absent-term rule's words when it refuses."""
    if ev.recalled == 0 or ev.best_score is None:
        return Decider.NOTHING_RECALLED, []
    a = ev.answerability
    if a is None:
        return (Decider.RERANK_THRESHOLD if ev.calibrated else Decider.UNCALIBRATED), []
    if a.threshold <= 0:  # the stage never refuses (uncalibrated scores under the rule, or turned off)
        return Decider.UNCALIBRATED, []
    veto = refusing(a, ev.question)
    if veto:
        return Decider.ABSENT_TERMS, veto
    return (Decider.ANSWERABILITY if a.weights else Decider.TOP_SCORE_RULE), []


def _comparison(ev: Evidence) -> str:
    """The decider's comparison first; figures that did not decide follow, saying so."""
    rule, veto = decider(ev)
    if rule is Decider.NOTHING_RECALLED:
        return "nothing was recalled"
    if rule is Decider.UNCALIBRATED:
        return "reranker scores are not calibrated; threshold not applied"
    if rule is Decider.RERANK_THRESHOLD:
        return f"best rerank score {compared(ev.best_score, ev.threshold, named='threshold')}"
    a = ev.answerability
    name = "best rerank score" if rule is Decider.TOP_SCORE_RULE else "P(answerable)"
    out = f"{name} {compared(a.probability, a.threshold)}"
    if rule is Decider.ABSENT_TERMS:
        words = ", ".join(repr(t) for t in veto)
        out = f"absent-term rule: {words} in no searched chunk (it refuses whatever the score; {out})"
    return out + (f"; {a.missing.rstrip('.')}" if a.missing else "")


def decide_by_rules(ev: Evidence, policy: str = "auto") -> FallbackDecision:
    base = _comparison(ev)
    if not is_weak(ev):
        return _decision(FallbackAction.ANSWER, base, ev, cause=ActionCause.ANSWERS)
    # a term the searched documents never use stays missing however wide the search
    absent = ev.answerability is not None and bool(ev.answerability.absent_terms)
    can_widen = ev.attempt == 1 and ev.recalled > 0 and not absent
    if policy in ("auto", "retry_wider") and can_widen:
        return _decision(FallbackAction.RETRY_WIDER, f"{base}; widening recall once", ev, cause=ActionCause.WIDEN)
    vague = vagueness(ev.question)
    if policy == "clarify" or (policy != "reject" and vague):
        why, cause = (vague, ActionCause.VAGUE) if vague else ("policy is clarify", ActionCause.POLICY)
        return _decision(FallbackAction.CLARIFY, f"{base}; {why}", ev, clarify_message(ev.question), cause=cause)
    tail = "after a wider retry" if ev.attempt > 1 else "question is specific"
    cause = ActionCause.RETRIED if ev.attempt > 1 else ActionCause.SPECIFIC
    return _decision(FallbackAction.REJECT, f"{base}; {tail}", ev, refusal_message(ev), cause=cause)


def refusal_message(ev: Evidence) -> str:
    """The fixed refusal in the question's language, led by what was missing when the
    answerability stage can say it."""
    missing = ev.answerability.missing if ev.answerability is not None else ""
    text = refusal_text(ev.question)
    if not missing:
        return text
    return f"{missing}{text}" if is_chinese(ev.question) else f"{missing} {text}"


def _decision(
    action: FallbackAction,
    reason: str,
    ev: Evidence,
    message: str = "",
    by: str = "rules",
    cause: ActionCause | None = None,
    detail: str = "",
) -> FallbackDecision:
    """The decision with the score and threshold actually compared (P(answerable) when it ran),
    the rule that decided, and why this action."""
    a = ev.answerability
    compared = a is not None and ev.recalled > 0
    score, threshold = (a.probability, a.threshold) if compared else (ev.best_score, ev.threshold)
    rule, veto = decider(ev)
    if cause is ActionCause.VAGUE and not detail:
        detail = vagueness(ev.question)
    return FallbackDecision(
        action, reason, score, threshold, judged_by=by, message=message,
        decided_by=rule, vetoed_terms=veto, cause=cause, cause_detail=detail,
    )  # fmt: skip


_JUDGE_PROMPT = (
    "A search over a document collection found weak evidence for a user's question.\n"
    "Question: {q}\nBest evidence (score {score} against threshold {thr}):\n{snippets}\n"
    "Choose one action: {actions}. 'retry_wider' searches again with more candidates; 'clarify' "
    "asks the user a question back (write it in 'message'); 'reject' refuses.\n"
    'Answer with JSON: {{"action": "...", "reason": "...", "message": "..."}}'
)


def decide(ev: Evidence, policy: str = "auto", llm: object | None = None, snippets: list[str] | None = None):
    """The fallback decision; LLM-judged under policy ``auto`` when ``llm`` is given and evidence is weak."""
    rule = decide_by_rules(ev, policy)
    if llm is None or policy != "auto" or rule.action is FallbackAction.ANSWER:
        return rule
    allowed = ["clarify", "reject"] + (["retry_wider"] if ev.attempt == 1 and ev.recalled > 0 else [])
    prompt = _JUDGE_PROMPT.format(
        q=ev.question,
        score="none" if ev.best_score is None else f"{ev.best_score:.3f}",
        thr=f"{ev.threshold:.3f}",
        snippets="\n".join(f"- {s[:300]}" for s in (snippets or [])[:3]) or "(nothing recalled)",
        actions=", ".join(allowed),
    )
    try:
        out = ask_json(llm, prompt, ["action", "reason"])
        action = FallbackAction(str(out["action"]).strip().lower())
        if action.value not in allowed:
            raise ValueError(f"action {action.value!r} not allowed here")
    except LLM_ERRORS as exc:
        log.warning("LLM fallback verdict unusable (%s); using the rules", exc)
        reason = f"{rule.reason} (LLM verdict unusable: {exc})"
        return _decision(rule.action, reason, ev, rule.message, cause=rule.cause, detail=rule.cause_detail)
    message = str(out.get("message") or "")
    if action is FallbackAction.REJECT:
        message = refusal_message(ev)
    elif action is FallbackAction.CLARIFY and not message:
        message = clarify_message(ev.question)
    said = str(out["reason"])[:300]
    return _decision(
        action, f"{_comparison(ev)}; LLM: {said}", ev, message, by="llm", cause=ActionCause.LLM, detail=said
    )
