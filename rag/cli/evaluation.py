"""`python -m rag eval {run,compare,list,import-beir,import-squad}` and `python -m rag report`.

User-fixable problems (a malformed gold set, an unknown setting, a missing run) raise
``RagError``; ``rag.cli.main`` prints them in one line and exits 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import fields
from pathlib import Path

from rag.config import Settings
from rag.errors import ConfigError
from rag.eval.beir import folds_arg

log = logging.getLogger(__name__)


def add_parsers(sub) -> None:
    e = sub.add_parser("eval", help="evaluate gold sets per stage, compare runs, import BEIR datasets")
    esub = e.add_subparsers(dest="eval", required=True)

    r = esub.add_parser("run", help="run a gold set; prints metrics per stage, refusal and citation figures")
    r.add_argument("gold", help="gold-set JSONL file (docs/GOLDSETS.md)")
    r.add_argument("--kb", required=True)
    r.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="override a setting, e.g. top_n=8"
    )
    r.add_argument("--no-answers", action="store_true", help="retrieval only (refusal read from the fallback)")
    r.add_argument("--limit", type=int, default=0, help="only the first N questions")
    r.add_argument("--csv", help="also write the per-question CSV here")
    r.add_argument("--json", help="also write the whole run as JSON here")
    r.set_defaults(func=cmd_run)

    c = esub.add_parser("compare", help="compare two stored runs (b against baseline a)")
    c.add_argument("run_a")
    c.add_argument("run_b")
    c.add_argument("--kb", required=True)
    c.add_argument("--metric", default="ndcg@10")
    c.add_argument("--stage", default="evidence", help="dense | bm25 | rrf | rerank | evidence")
    c.add_argument("--level", default="auto", help="chunk | doc | auto")
    c.set_defaults(func=cmd_compare)

    ls = esub.add_parser("list", help="stored runs of a knowledge base")
    ls.add_argument("--kb", required=True)
    ls.set_defaults(func=cmd_list)

    b = esub.add_parser("import-beir", help="ingest a BEIR corpus as a knowledge base and write its gold set")
    b.add_argument(
        "data_dir",
        help="a dataset name in RAG_BENCH_DATA (e.g. scifact) or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)",
    )
    b.add_argument("--kb", required=True)
    b.add_argument("--split", default="test")
    b.add_argument("--limit", type=int, default=0, help="only the first N corpus documents")
    b.add_argument(
        "--folds",
        type=folds_arg,
        default=frozenset(),
        help="only questions of these folds (metadata.fold: a SQuAD-shaped set's), e.g. 3,4",
    )
    b.add_argument("--out", help="gold-set path (default <home>/goldsets/<kb>/<dataset>-<split>.jsonl)")
    b.set_defaults(func=cmd_import_beir)

    q = esub.add_parser("import-squad", help="write a SQuAD-shaped file (CMRC 2018) as a BEIR folder the fits read")
    q.add_argument("source", type=Path, help="the SQuAD-shaped JSON file (e.g. cmrc2018_trial.json)")
    q.add_argument("out", type=Path, help="the BEIR folder to write (e.g. cmrc2018-trial/beir)")
    q.add_argument("--split", default="train", help="the qrels split name (default train)")
    q.set_defaults(func=cmd_import_squad)

    rep = sub.add_parser("report", help="benchmark report: SciFact, RGB-zh, demo gold set -> docs/BENCHMARKS.md")
    rep.add_argument("--bench", default=None, help="folder with scifact/ and rgb-zh/ (default: RAG_BENCH_DATA)")
    rep.add_argument("--out", default="docs/BENCHMARKS.md")
    rep.add_argument("--only", action="append", choices=["scifact", "rgb-zh", "demo"], help="run only these sections")
    rep.add_argument("--rgb-limit", type=int, default=0, help="RGB-zh answer runs on the first N questions only")
    rep.add_argument(
        "--refusal-dump",
        action="append",
        default=[],
        help="a `bench refusal --dump` file: its trade-off curves join the plot",
    )
    rep.set_defaults(func=cmd_report)


def parse_overrides(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs as settings field names (``top-n``, ``RAG_TOP_N`` and ``top_n`` all work)."""
    known = {f.name for f in fields(Settings)}
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        name = key.strip().lower().replace("-", "_").removeprefix("rag_")
        if not sep or not name:
            raise ConfigError(f"--config {pair!r} is not KEY=VALUE.", fix="Write it like --config top_n=8.")
        if name not in known:
            raise ConfigError(f"--config: unknown setting '{key}'.", fix=f"Use one of: {', '.join(sorted(known))}.")
        out[name] = value.strip()
    return out


def settings_with(overrides: dict[str, str]) -> Settings:
    """Settings from the environment with ``overrides`` applied (coerced and validated as env vars are)."""
    env = dict(os.environ) | {f"RAG_{k.upper()}": v for k, v in overrides.items()}
    return Settings.from_env(env=env)


def open_kb(name: str, settings: Settings):
    from rag.demo import DEMO_KB, ensure_demo_kb
    from rag.kb import KnowledgeBase

    if name == DEMO_KB:
        return ensure_demo_kb(settings)
    return KnowledgeBase(name, settings, create=False)


def cmd_run(args) -> int:
    from rag.eval.gold.goldset import load_goldset
    from rag.eval.runs import run_goldset, to_csv, to_json
    from rag.eval.runs.tables import run_text

    gold = load_goldset(args.gold)  # before any model loads: a malformed file fails fast
    if args.limit:
        gold = gold.with_items(gold.items[: args.limit])
    overrides = parse_overrides(args.config)
    settings = settings_with(overrides)
    for name in {"chunk_size", "chunk_overlap", "embed_model"} & set(overrides):
        print(f"note: {name} changes the index only on re-ingest; this run uses the existing index", file=sys.stderr)
    kb = open_kb(args.kb, settings)

    def progress(done: int, total: int, question: str) -> None:
        if done == total or done % 10 == 0:
            print(f"  {done}/{total} questions", file=sys.stderr)

    run = run_goldset(kb, gold, settings, progress=progress, answers=not args.no_answers, principal=args.principal)
    print(run_text(run))
    if args.csv:
        Path(args.csv).write_text(to_csv(run), encoding="utf-8")
    if args.json:
        Path(args.json).write_text(to_json(run, indent=1), encoding="utf-8")
    print(f"\nrun id: {run.id}  (compare: python -m rag eval compare {run.id} OTHER_RUN --kb {kb.name})")
    return 0


def cmd_compare(args) -> int:
    from rag.eval.runs import compare_runs, load_run
    from rag.eval.runs.tables import comparison_text

    kb = open_kb(args.kb, Settings.from_env())
    a, b = load_run(kb, args.run_a, args.principal), load_run(kb, args.run_b, args.principal)
    try:
        cmp = compare_runs(a, b, metric=args.metric, stage=args.stage, level=args.level)
    except ValueError as exc:
        raise ConfigError(str(exc), fix="See `python -m rag eval compare --help`.") from None
    print(comparison_text(cmp))
    return 0


def cmd_list(args) -> int:
    from rag.eval.runs import list_runs
    from rag.eval.runs.tables import fmt

    kb = open_kb(args.kb, Settings.from_env())
    runs = list_runs(kb, args.principal)
    for r in runs:
        head = " ".join(f"{k} {fmt(v)}" for k, v in r.headline.items())
        print(f"{r.id}  {r.created_at}  {r.goldset:20}  {r.questions:>4} q  config {r.config_fingerprint}  {head}")
    print(f"{len(runs)} runs in '{kb.name}'")
    return 0


def cmd_import_squad(args) -> int:
    from rag.eval.squad_beir import convert

    done = convert(args.source, args.out, args.split)
    print(f"wrote {args.out}: {done.passages} passages, {done.queries} queries (qrels/{args.split}.tsv)")
    return 0


def cmd_import_beir(args) -> int:
    from rag.eval.beir_import import import_beir
    from rag.eval.datasets import resolve_dataset
    from rag.eval.gold.builder import goldsets_dir
    from rag.eval.gold.goldset import save_goldset
    from rag.kb import KnowledgeBase

    settings = Settings.from_env()
    data_dir = resolve_dataset(args.data_dir, settings)  # before creating the knowledge base
    kb = KnowledgeBase(args.kb, settings, create=True, creator=args.principal)
    result = import_beir(
        kb, data_dir, args.split, args.limit, lambda n, msg: print(f"  {msg}", file=sys.stderr), folds=args.folds
    )
    out = Path(args.out) if args.out else goldsets_dir(kb) / f"{result.gold.name}.jsonl"
    save_goldset(result.gold, out)
    print(
        f"kb '{kb.name}': {result.documents} documents ({result.ingested} ingested now, {result.present} already there, "
        f"{len(result.failed)} failed)"
    )
    dropped = f" ({result.dropped_queries} dropped: relevant documents not ingested)" if result.dropped_queries else ""
    print(f"gold set: {out} ({len(result.gold)} questions{dropped})")
    print(f"next: python -m rag eval run {out} --kb {kb.name} --no-answers")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from rag.bench.report import main

    return main(args)
