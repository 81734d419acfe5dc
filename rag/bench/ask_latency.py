"""`python -m rag bench ask [SET ...]`: what a question costs end to end, English beside Chinese.

Each set's questions are asked as Chat asks them: retrieval up to the answerability decision,
then the answer (extractive by default) when the decision is to answer. They go to the set's
benchmark knowledge base as is (``<home>/bench``, the one ``bench beir`` and ``bench refusal``
use). The first ``--warm`` questions load the models and fill the caches, and are not timed.

Prints per set the p50 / p95 of the whole ask, of retrieval and of the answer stage, each
retrieval stage's p50, the knowledge base's size in chunks, and the models that ran. When both a
Chinese and an English set ran, it prints the ratio of their p50s as well. Traces are stored, as
Chat stores them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rag.ask import TraceReady, TurnDone, stream_ask
from rag.bench.beir import bench_home, default_kb_name, ingest_beir
from rag.bench.refusal import SETS, check_sets, questions, set_folder
from rag.config import Settings
from rag.errors import DatasetError
from rag.eval.metrics import latency_summary
from rag.retrieval.answerability import script_of
from rag.stages import TIMED_STAGES

Out = Callable[[str], None]
ASK_SETS = tuple(name for name, s in SETS.items() if not (s.hard or s.paraphrased))
DEFAULT_ASK_SETS = ("scifact", "rgb-zh")


@dataclass
class AskTimes:
    """One set's timed asks, in milliseconds."""

    name: str
    chunks: int
    script: str = ""  # latin | cjk: the script most of its questions are written in
    ask: list[float] = field(default_factory=list)
    retrieval: list[float] = field(default_factory=list)
    answer: list[float] = field(default_factory=list)  # answered questions only
    stages: dict[str, list[float]] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)
    refused: int = 0

    def p50(self, what: str) -> float | None:
        return latency_summary(getattr(self, what))["p50"]

    def lines(self) -> list[str]:
        out = [
            f"ask {self.name} ({self.script}, {len(self.ask)} questions, {self.refused} refused, "
            f"knowledge base of {self.chunks:,} chunks): "
            + " · ".join(f"{what} {_p50_p95(getattr(self, what))}" for what in ("ask", "retrieval", "answer"))
        ]
        staged = [(s, latency_summary(self.stages[s])["p50"]) for s in TIMED_STAGES if self.stages.get(s)]
        out.append("  retrieval stages, p50 ms: " + ", ".join(f"{s} {v:.1f}" for s, v in staged))
        out.extend(f"  model: {m}" for m in sorted(self.models))
        return out


def _p50_p95(values: list[float]) -> str:
    lat = latency_summary(values)
    if lat["p50"] is None:
        return "-"
    return f"p50 {lat['p50']:.0f} ms, p95 {lat['p95']:.0f} ms"


def time_set(name: str, settings: Settings, limit: int, warm: int, out: Out = print) -> AskTimes:
    """Ask ``warm`` untimed questions of set ``name``, then time the next ``limit``."""
    rs = SETS[name]
    folder = set_folder(rs, settings)
    home = settings.replace(home=bench_home(settings))
    kb = ingest_beir(folder, home, default_kb_name(folder), out)
    result = AskTimes(name, len(kb.bm25().ids))
    scripts = []
    for k, (_, question, _) in enumerate(questions(folder, rs.split)):
        if k >= warm + limit:
            break
        t0 = time.perf_counter()
        trace = turn = None
        for event in stream_ask(kb, question, home, persist=False):
            if isinstance(event, TraceReady):
                trace, t_trace = event.trace, time.perf_counter()
            elif isinstance(event, TurnDone):
                turn = event.turn
        t_done = time.perf_counter()
        if k < warm:
            continue
        scripts.append(script_of(question))
        result.ask.append((t_done - t0) * 1000)
        result.retrieval.append((t_trace - t0) * 1000)
        if turn.answer.refused:
            result.refused += 1
        else:
            result.answer.append((t_done - t_trace) * 1000)
        for stage, ms in trace.timings_ms.items():
            result.stages.setdefault(stage, []).append(ms)
        result.models |= {str(trace.reranker), str(turn.answer.generator)}
        if trace.answerability and trace.answerability.reader:
            result.models.add(f"readers: {trace.answerability.reader}")
    if not scripts:
        raise DatasetError(f"Set '{name}' has no questions to time.", fix="Lower --warm or check the set's queries.")
    result.script = max(set(scripts), key=scripts.count)
    return result


def ratio_line(results: list[AskTimes]) -> str:
    """Chinese over English p50s, for the first set of each script; empty without both."""
    first = {}
    for r in results:
        first.setdefault(r.script, r)
    if not {"cjk", "latin"} <= first.keys():
        return ""
    zh, en = first["cjk"], first["latin"]
    parts = []
    for what in ("ask", "retrieval", "answer"):
        a, b = zh.p50(what), en.p50(what)
        if a is not None and b:
            parts.append(f"{what} {a / b:.2f}x")
    return f"Chinese / English p50 ({zh.name} / {en.name}): " + ", ".join(parts)


def add_ask_parser(bsub) -> None:
    p = bsub.add_parser("ask", help="p50/p95 of a whole ask (retrieval + answer), Chinese sets beside English ones")
    p.add_argument("sets", nargs="*", default=list(DEFAULT_ASK_SETS), help=f"any of {', '.join(ASK_SETS)}")
    p.add_argument("--limit", type=int, default=100, help="timed questions per set")
    p.add_argument("--warm", type=int, default=5, help="untimed questions first (model loads, caches)")
    p.set_defaults(func=main)


def main(args) -> int:
    check_sets(args.sets, ASK_SETS)
    settings = Settings.from_env()
    print(f"config {settings.fingerprint()} · reranker {settings.reranker} · fallback {settings.fallback}")
    results = []
    for name in args.sets:
        result = time_set(name, settings, args.limit, args.warm)
        for line in result.lines():
            print(line)
        results.append(result)
    if line := ratio_line(results):
        print(line)
    return 0
