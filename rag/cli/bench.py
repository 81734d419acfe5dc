"""`python -m rag bench {ingest,beir,query,ask,refusal,citations,scale,soak,pages,signin,parse}`: benchmarks that print figures (rag.bench)."""

from __future__ import annotations


def add_parsers(sub) -> None:
    s = sub.add_parser("bench", help="benchmarks that print figures")
    bsub = s.add_subparsers(dest="bench", required=True)
    b = bsub.add_parser("ingest", help="ingest throughput vs the raw encoder and a plain LlamaIndex build")
    b.add_argument("path", help="a folder of documents, a BEIR corpus.jsonl, or a dataset name in RAG_BENCH_DATA")
    b.add_argument("--limit", type=int, default=0, help="only the first N documents")
    b.set_defaults(func=_bench_ingest)
    from rag.bench.ask_latency import add_ask_parser
    from rag.bench.beir import add_beir_parser
    from rag.bench.citations import add_citations_parser
    from rag.bench.latency import add_query_parser
    from rag.bench.refusal import add_refusal_parser
    from rag.bench.scale import add_scale_parser
    from rag.bench.signin import add_signin_parser
    from rag.bench.soak import add_soak_parser

    add_beir_parser(bsub)
    add_query_parser(bsub)
    add_ask_parser(bsub)
    add_refusal_parser(bsub)
    add_citations_parser(bsub)
    add_scale_parser(bsub)
    p = bsub.add_parser("pages", help="time from navigation to a rendered page, in Chromium (warm models)")
    p.add_argument("--repeat", type=int, default=5, help="timed navigations per page")
    p.add_argument("--home", default="", help="data directory (default: RAG_HOME, else a temp dir)")
    p.set_defaults(func=_bench_pages)
    add_signin_parser(bsub)
    add_soak_parser(bsub)
    from rag.bench.parse import add_parser as add_parse_parser

    add_parse_parser(bsub)


def _bench_ingest(args) -> int:
    from rag.bench.ingest import main

    return main(args)


def _bench_pages(args) -> int:
    from rag.bench.pages import main

    return main(args)
