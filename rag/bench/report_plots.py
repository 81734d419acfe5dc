"""The report's images: the refusal trade-off curves and the per-stage nDCG@10 bars (PNG, Agg).

``python -m rag report`` writes them next to docs/BENCHMARKS.md (``docs/img/``) and links them
from its tables. A trade-off curve is read from P(answerable) of questions that must be refused
(unanswerable) and of questions that must be answered: as the threshold rises both refused shares
rise; the operating point (``RAG_ANSWERABLE_THRESHOLD``, 0.5) is marked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

THRESHOLDS = tuple(i / 100 for i in range(0, 101, 2))
OPERATING_POINT = 0.5


@dataclass(frozen=True)
class Curve:
    """One set's P(answerable) readings, split by what the right behaviour was."""

    label: str
    answerable: tuple[float, ...]
    unanswerable: tuple[float, ...]

    def at(self, threshold: float) -> tuple[float, float]:
        """(answerable refused, unanswerable refused) had the threshold been ``threshold``."""
        return _share_below(self.answerable, threshold), _share_below(self.unanswerable, threshold)

    def points(self, thresholds: Sequence[float] = THRESHOLDS) -> list[tuple[float, float, float]]:
        return [(t, *self.at(t)) for t in thresholds]


def _share_below(values: Sequence[float], threshold: float) -> float:
    return sum(v < threshold for v in values) / len(values) if values else 0.0


def curve(label: str, rows: Iterable[tuple[float | None, bool]]) -> Curve | None:
    """A curve from (P(answerable), must be refused) pairs; None without both kinds."""
    rows = [(p, refuse) for p, refuse in rows if p is not None]
    pos = tuple(p for p, refuse in rows if not refuse)
    neg = tuple(p for p, refuse in rows if refuse)
    return Curve(label, pos, neg) if pos and neg else None


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a server or in tests
    import matplotlib.pyplot as plt

    return plt


def plot_tradeoff(curves: Sequence[Curve], path: Path) -> Path:
    """Unanswerable refused (y) against answerable refused (x) as the threshold moves, one line a set."""
    if not curves:
        raise ValueError("plot_tradeoff needs at least one curve")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=110)
    for c in curves:
        pts = c.points()
        ax.plot([p[1] for p in pts], [p[2] for p in pts], label=c.label, linewidth=1.8)
        x, y = c.at(OPERATING_POINT)
        ax.plot([x], [y], marker="o", color=ax.lines[-1].get_color())
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", linewidth=1, label="no better than chance")
    ax.set_xlabel("answerable questions refused (false refusals)")
    ax.set_ylabel("unanswerable questions refused (correct refusals)")
    ax.set_title(f"Refusal trade-off as the answerability threshold moves (dot: {OPERATING_POINT})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, plt, path)


def plot_stages(ndcg: Mapping[str, Mapping[str, float | None]], path: Path) -> Path:
    """nDCG@10 per pipeline stage, grouped by benchmark: ``{benchmark: {stage: value}}``."""
    if not ndcg:
        raise ValueError("plot_stages needs at least one benchmark")
    plt = _pyplot()
    stages = list(dict.fromkeys(s for per in ndcg.values() for s in per))
    width = 0.8 / len(ndcg)
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for i, (bench, per) in enumerate(ndcg.items()):
        xs = [j + (i - (len(ndcg) - 1) / 2) * width for j in range(len(stages))]
        values = [per.get(s) or 0.0 for s in stages]
        bars = ax.bar(xs, values, width, label=bench)
        ax.bar_label(bars, labels=[f"{v:.3f}" for v in values], fontsize=7, padding=2)
    ax.set_xticks(range(len(stages)), stages)
    ax.set_ylabel("nDCG@10 (document level)")
    ax.set_ylim(0, 1)
    ax.set_title("nDCG@10 per stage")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, plt, path)


def _save(fig, plt, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
    return path
