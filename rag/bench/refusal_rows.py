"""What `bench refusal` records: one ``Row`` per question and condition, a set's ``SetResult``
(its line, the line on questions whose answer is gone, the trade-off curve), how a result is
printed, and the dump ``rag.bench.fit_answerability`` fits on."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag.bench.answer_reader import fold_of
from rag.eval.metrics import auc, latency_summary
from rag.retrieval.answerability import vetoing

Out = Callable[[str], None]
UNANSWERABLE = "unanswerable"  # removed or impossible
CURVE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass
class Row:
    """One question in one condition: what was decided and why."""

    set: str
    qid: str
    condition: str  # as_is | removed
    question: str
    refused: bool
    action: str
    probability: float | None
    script: str
    features: dict[str, float]
    absent_terms: list[str]
    ms: float
    # a reference answer is in a passage the removed condition searches (None: the set has no answers)
    answer_left: bool | None = None
    fold: int | None = None  # the question's fold when not ``fold_of(qid)`` (SQuAD-shaped sets: its article's)

    def vetoed(self, weighed: Sequence[str]) -> list[str]:
        """The absent words that refused it on their own under a model weighing ``weighed`` (``vetoing``)."""
        return vetoing(self.absent_terms, self.script, self.question, weighed)

    @property
    def answerable(self) -> bool:
        return self.condition == "as_is"

    @property
    def fold_key(self) -> int:
        return fold_of(self.qid) if self.fold is None else self.fold


@dataclass
class SetResult:
    name: str
    rows: list[Row] = field(default_factory=list)

    def split(self, condition: str) -> list[Row]:
        return [r for r in self.rows if r.condition == condition]

    def unanswerable(self) -> list[Row]:
        """Rows whose knowledge base does not answer: removed, or asked of a paragraph written
        not to answer it (``impossible``, SQuAD 2.0)."""
        return [r for r in self.rows if not r.answerable]

    def refused(self, condition: str) -> tuple[int, int]:
        rows = self.unanswerable() if condition == UNANSWERABLE else self.split(condition)
        return sum(r.refused for r in rows), len(rows)

    def line(self) -> str:
        a, n = self.refused(UNANSWERABLE)
        b, m = self.refused("as_is")
        return (
            f"refusal {self.name}: unanswerable refused {a}/{n} ({_share(a, n)}) · "
            f"answerable refused {b}/{m} ({_share(b, m)})"
        )

    def clean(self) -> SetResult:
        """The questions whose removed condition leaves no passage holding a reference answer."""
        gone = {r.qid for r in self.rows if r.condition == "removed" and r.answer_left is False}
        return SetResult(self.name, [r for r in self.rows if r.qid in gone])

    def clean_line(self) -> str:
        """:meth:`line` on :meth:`clean`, with how many questions it keeps; '' for a set without
        reference answers."""
        removed = self.split("removed")
        if not removed or any(r.answer_left is None for r in removed):
            return ""
        clean = self.clean()
        a, n = clean.refused("removed")
        b, m = clean.refused("as_is")
        return (
            f"refusal {self.name}, answer in no passage left ({n} of {len(removed)} questions): "
            f"unanswerable refused {a}/{n} ({_share(a, n)}) · answerable refused {b}/{m} ({_share(b, m)})"
        )

    def auc(self) -> float:
        """AUC of P(answerable) (the final attempt's), answerable against unanswerable questions:
        the area under the trade-off :meth:`curve` samples, which a change that only moves the
        operating point along it leaves as it was."""
        rows = [r for r in self.rows if r.probability is not None]
        return auc((r.probability for r in rows), (r.answerable for r in rows))

    def curve(self, thresholds=CURVE) -> list[tuple[float, float, float]]:
        """(threshold, unanswerable refused, answerable refused) had the threshold been t
        (on the final attempt's P(answerable); a wider retry it would have caused is not replayed)."""
        out = []
        for t in thresholds:
            shares = []
            for cond in (UNANSWERABLE, "as_is"):
                rows = [
                    r
                    for r in (self.unanswerable() if cond == UNANSWERABLE else self.split(cond))
                    if r.probability is not None
                ]
                shares.append(sum(r.probability < t for r in rows) / max(len(rows), 1))
            out.append((t, shares[0], shares[1]))
        return out


def _share(a: int, n: int) -> str:
    return f"{a / n:.3f}" if n else "n/a"


def print_result(result: SetResult, out: Out = print) -> None:
    out(result.line())
    if clean := result.clean_line():
        out(clean)
    out("  trade-off as the answerability threshold moves (share refused: unanswerable · answerable):")
    out("  " + "  ".join(f"{t:.1f}: {u:.2f}·{a:.2f}" for t, u, a in result.curve()))
    if not math.isnan(height := result.auc()):
        out(f"  AUC of P(answerable), answerable vs unanswerable: {height:.3f} (whatever the threshold)")
    for cond in ("as_is", "removed"):
        lat = latency_summary(r.ms for r in result.split(cond))
        if lat["p50"] is not None:
            out(f"  latency {cond}: p50 {lat['p50']:.1f} ms, p95 {lat['p95']:.1f} ms")


def dump(results: list[SetResult], path: Path) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for result in results:
            for row in result.rows:
                fh.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")


def load_dump(path: Path) -> list[Row]:
    with path.open(encoding="utf-8") as fh:
        return [Row(**json.loads(line)) for line in fh if line.strip()]
