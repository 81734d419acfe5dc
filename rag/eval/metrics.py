"""Evaluation metrics as pure functions, each with its formula.

Ranking metrics take ``ranked`` (ids, best first) and ``relevant`` (``{id: grade}``; a grade
<= 0 means not relevant). Conventions, the same as trec_eval / ir_measures:

* ``ranked`` is de-duplicated first (the first occurrence of an id counts), then cut at k;
* ``k == 0`` gives 0.0 and a negative k raises ``ValueError``;
* a question with no relevant id gives ``None`` for every ranking metric: the metric is
  undefined there, and :func:`mean` leaves it out (trec_eval skips queries without
  relevance judgements). Questions that should be refused are scored by the refusal metrics.

With ``R`` the relevant ids, ``top_k`` the first k ranked ids and ``g(d)`` the grade of d:

* Recall@k    = |R ∩ top_k| / |R|
* Precision@k = |R ∩ top_k| / k        (k, not len(top_k): a short list is not rewarded)
* Hit@k       = 1 if R ∩ top_k is non-empty else 0
* MRR@k       = 1 / rank of the first relevant id in top_k, 0 if there is none
* nDCG@k      = DCG@k / IDCG@k, DCG@k = sum over i = 1..k of g(ranked_i) / log2(i + 1)
  (linear gain, as trec_eval's ndcg_cut), IDCG@k = the DCG of all relevant grades sorted
  in descending order and cut at k.

A decision's scores are judged by AUC: the probability that a positive (an answerable question)
scores above a negative (an unanswerable one), ties counting half (Mann-Whitney U / (P x N)).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rag.text.script import CJK_LETTERS

DEFAULT_KS = (1, 3, 5, 10)


def _prepare(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> tuple[list[str], set[str]] | None:
    """De-duplicated top-k and the set of relevant ids; None when no id is relevant."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    rel = {doc for doc, grade in relevant.items() if grade > 0}
    if not rel:
        return None
    return list(dict.fromkeys(ranked))[:k], rel


def recall_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float | None:
    """|R ∩ top_k| / |R|."""
    prepared = _prepare(ranked, relevant, k)
    if prepared is None:
        return None
    top, rel = prepared
    return len(rel.intersection(top)) / len(rel)


def precision_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float | None:
    """|R ∩ top_k| / k."""
    prepared = _prepare(ranked, relevant, k)
    if prepared is None:
        return None
    top, rel = prepared
    return len(rel.intersection(top)) / k if k else 0.0


def hit_rate(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float | None:
    """Hit@k: 1.0 if any relevant id is in top_k, else 0.0."""
    prepared = _prepare(ranked, relevant, k)
    if prepared is None:
        return None
    top, rel = prepared
    return 1.0 if rel.intersection(top) else 0.0


def mrr(ranked: Sequence[str], relevant: Mapping[str, float], k: int | None = None) -> float | None:
    """MRR@k (reciprocal rank of the first relevant id within top_k; whole list when k is None)."""
    prepared = _prepare(ranked, relevant, len(ranked) if k is None else k)
    if prepared is None:
        return None
    top, rel = prepared
    for rank, doc in enumerate(top, start=1):
        if doc in rel:
            return 1.0 / rank
    return 0.0


def dcg(gains: Iterable[float]) -> float:
    """sum over i = 1.. of gain_i / log2(i + 1)."""
    return sum(g / math.log2(i + 1) for i, g in enumerate(gains, start=1) if g > 0)


def ndcg_at_k(ranked: Sequence[str], relevant: Mapping[str, float], k: int) -> float | None:
    """DCG@k / IDCG@k with linear gains ``relevant[id]``; the ideal ranks all relevant grades."""
    prepared = _prepare(ranked, relevant, k)
    if prepared is None:
        return None
    top, _ = prepared
    ideal = dcg(sorted((g for g in relevant.values() if g > 0), reverse=True)[:k])
    return dcg(relevant.get(doc, 0.0) for doc in top) / ideal if ideal else 0.0


def ranking_metrics(
    ranked: Sequence[str], relevant: Mapping[str, float], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, float | None]:
    """All ranking metrics at each k, keyed ``recall@5``, ``precision@5``, ``hit@5``, ``mrr@5``, ``ndcg@5``."""
    out: dict[str, float | None] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(ranked, relevant, k)
        out[f"precision@{k}"] = precision_at_k(ranked, relevant, k)
        out[f"hit@{k}"] = hit_rate(ranked, relevant, k)
        out[f"mrr@{k}"] = mrr(ranked, relevant, k)
        out[f"ndcg@{k}"] = ndcg_at_k(ranked, relevant, k)
    return out


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values (None left out); None when nothing is defined."""
    defined = [v for v in values if v is not None]
    return sum(defined) / len(defined) if defined else None


# --- refusal -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RefusalStats:
    """Counts over (should_refuse, refused) pairs, and the rates built on them."""

    total: int
    should_refuse: int
    correct_refusals: int  # should refuse, refused
    false_refusals: int  # answerable, refused
    answered_when_should_refuse: int  # should refuse, answered
    answered: int  # answerable, answered (whether the answer is right is measured elsewhere)

    @property
    def accuracy(self) -> float | None:
        """(correct refusals + answered answerable) / total."""
        return _share(self.correct_refusals + self.answered, self.total)

    @property
    def refusal_recall(self) -> float | None:
        """correct refusals / questions that should be refused."""
        return _share(self.correct_refusals, self.should_refuse)

    @property
    def refusal_precision(self) -> float | None:
        """correct refusals / all refusals."""
        return _share(self.correct_refusals, self.correct_refusals + self.false_refusals)

    @property
    def false_refusal_rate(self) -> float | None:
        """false refusals / answerable questions."""
        return _share(self.false_refusals, self.total - self.should_refuse)

    def as_dict(self) -> dict[str, float | int | None]:
        rates = ("accuracy", "refusal_recall", "refusal_precision", "false_refusal_rate")
        counts = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return counts | {name: getattr(self, name) for name in rates}


def refusal_stats(pairs: Iterable[tuple[bool, bool]]) -> RefusalStats:
    """Tally ``(should_refuse, refused)`` pairs, one per question."""
    tally: Counter[tuple[bool, bool]] = Counter((bool(s), bool(r)) for s, r in pairs)
    return RefusalStats(
        total=sum(tally.values()),
        should_refuse=tally[True, True] + tally[True, False],
        correct_refusals=tally[True, True],
        false_refusals=tally[False, True],
        answered_when_should_refuse=tally[True, False],
        answered=tally[False, False],
    )


def citation_validity(valid: Iterable[bool]) -> float | None:
    """Share of shown citations that validate: valid / shown; None when nothing was cited."""
    flags = [bool(v) for v in valid]
    return _share(sum(flags), len(flags))


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# --- answers -----------------------------------------------------------------------------

_CJK = CJK_LETTERS
_TOKEN = re.compile(f"[{_CJK}]|[^\\W{_CJK}]+")
_THOUSANDS = re.compile(r"(?<=\d)[,\u2009\u202f](?=\d{3}(?!\d))")


def answer_tokens(text: str) -> list[str]:
    """Tokens for answer matching: NFKC, case-folded; words and numbers (thousands separators
    removed, other punctuation dropped), and every CJK character as its own token."""
    text = _THOUSANDS.sub("", unicodedata.normalize("NFKC", text)).casefold()
    return [tok.strip("_") for tok in _TOKEN.findall(text) if tok.strip("_")]


def contains_answer(answer: str, reference: str) -> bool:
    """True when the reference's token sequence occurs, contiguous, in the answer's."""
    ref = answer_tokens(reference)
    if not ref:
        return False
    return f" {' '.join(ref)} " in f" {' '.join(answer_tokens(answer))} "


def token_recall(answer: str, reference: str) -> float | None:
    """|tokens(reference) ∩ tokens(answer)| / |tokens(reference)| (multisets); None for an empty reference."""
    ref = Counter(answer_tokens(reference))
    if not ref:
        return None
    return sum((ref & Counter(answer_tokens(answer))).values()) / sum(ref.values())


@dataclass(frozen=True)
class AnswerMatch:
    contained: bool
    token_recall: float | None


def answer_match(answer: str, reference: str) -> AnswerMatch:
    """Containment and token recall of ``reference`` in ``answer``."""
    return AnswerMatch(contains_answer(answer, reference), token_recall(answer, reference))


def latency_summary(values_ms: Iterable[float]) -> dict[str, float | None]:
    """mean, p50, p95 (nearest-rank) and max of per-question latencies in milliseconds."""
    ordered = sorted(values_ms)
    if not ordered:
        return {"mean": None, "p50": None, "p95": None, "max": None}

    def nearest_rank(q: float) -> float:
        return ordered[max(0, math.ceil(q * len(ordered)) - 1)]

    return {
        "mean": sum(ordered) / len(ordered),
        "p50": nearest_rank(0.5),
        "p95": nearest_rank(0.95),
        "max": ordered[-1],
    }


def auc(scores: Iterable[float], positive: Iterable[bool]) -> float:
    """AUC of ``scores`` for telling the ``positive`` items from the rest: the probability that a
    positive scores above a negative, ties half (scikit-learn's ``roc_auc_score``); NaN without
    both. It does not move with a threshold: a model that only shifts its operating point keeps it."""
    from sklearn.metrics import roc_auc_score  # imported when a decision is judged, not with the metrics

    labels = [bool(p) for p in positive]
    if all(labels) or not any(labels):
        return math.nan
    return float(roc_auc_score(labels, [float(s) for s in scores]))
