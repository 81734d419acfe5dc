"""Evaluation runs end to end on tiny knowledge bases built here (real embedder, real Chroma),
comparisons (hand-built runs with exact outcomes, and real runs), exports, the gold-set builder,
BEIR import, and the `eval` CLI."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from rag.ask import conversations, load_trace
from rag.eval.beir_import import import_beir
from rag.eval.gold.builder import add_judgement, goldset_paths, question_slug, remove_judgement
from rag.eval.gold.goldset import GoldSet, Passage, load_goldset, parse_goldset
from rag.eval.runs import compare_runs, list_runs, load_run, run_goldset, to_csv, to_json
from rag.eval.runs.results import EvalRun, QuestionResult
from rag.eval.runs.store import RunNotFound
from rag.eval.runs.tables import comparison_text, run_text
from tests.conftest import ROOT

DOCS = {
    "visitors.md": "# Visitors\n\nVisitors must sign in at the front desk and wear a visitor badge at all times.\n",
    "canteen.md": "# Canteen\n\nThe staff canteen serves hot lunch from 11:30 to 14:00 on weekdays only.\n",
    "parking.md": "# Parking\n\nStaff cars park on level 2 of the garage; bicycles go in the racks by gate B.\n",
}
GOLD = [
    {
        "id": "visitors",
        "question": "Where must visitors sign in when they arrive?",
        "relevant": [{"doc": "visitors.md", "quote": "sign in at the front desk", "grade": 2}],
        "hard_negatives": [{"doc": "parking.md", "quote": "Staff cars park on level 2"}],
        "reference_answer": "at the front desk",
    },
    {
        "id": "lunch",
        "question": "At what time does the staff canteen serve hot lunch?",
        "expected_docs": ["canteen.md"],
        "relevant": [{"doc": "canteen.md", "quote": "serves hot lunch from 11:30 to 14:00"}],
        "reference_answer": "11:30 to 14:00",
    },
    {"id": "salary", "question": "What is the annual salary of the chief executive officer?", "should_refuse": True},
]


@pytest.fixture
def kb(make_kb):
    kb = make_kb("office")
    for name, text in DOCS.items():
        assert kb.ingest_file(name, text.encode()).ok
    return kb


@pytest.fixture
def gold() -> GoldSet:
    return parse_goldset([json.dumps(item) for item in GOLD], name="office-gold")


def _chunk(kb, doc: str):
    (chunk,) = kb.chunks(doc)  # each document is one chunk
    return chunk


def test_run_scores_every_stage_and_is_stored(kb, gold):
    seen = []
    run = run_goldset(kb, gold, progress=lambda done, total, q: seen.append((done, total, q)))
    assert seen == [(1, 3, GOLD[0]["question"]), (2, 3, GOLD[1]["question"]), (3, 3, GOLD[2]["question"])]
    assert [q.id for q in run.questions] == ["visitors", "lunch", "salary"]
    visitors, lunch, salary = run.questions
    badge, canteen = _chunk(kb, "visitors.md").id, _chunk(kb, "canteen.md").id
    assert visitors.relevant_chunks == {badge: 2} and visitors.relevant_docs == {"visitors.md": 2}
    assert lunch.relevant_chunks == {canteen: 1} and lunch.relevant_docs == {"canteen.md": 1}
    for stage in ("dense", "bm25", "rrf", "rerank"):
        assert visitors.chunks[stage][0] == badge
        assert len(visitors.chunks[stage]) == (1 if stage == "bm25" else 3)  # BM25 lists matching chunks only
        assert visitors.docs[stage][0] == "visitors.md"
        # one relevant chunk at rank 1: R@1 = 1, P@5 = 1/5, MRR = 1, nDCG = 1
        assert visitors.metrics["chunk"][stage]["recall@1"] == 1.0
        assert visitors.metrics["chunk"][stage]["precision@5"] == pytest.approx(0.2)
        assert visitors.metrics["doc"][stage]["mrr@10"] == 1.0
        assert visitors.metrics["doc"][stage]["ndcg@10"] == 1.0
    assert salary.should_refuse and salary.metrics == {}  # refusals are scored by the refusal figures
    assert {q.kind for q in run.questions} <= {"answer", "refusal", "clarify"}
    for q in run.questions:
        assert load_trace(kb, q.trace_id).question == q.question  # the trace is persisted
        assert {"embed", "dense", "bm25", "rerank", "total", "wall"} <= set(q.latency_ms)
    if not visitors.refused:
        assert visitors.chunks["evidence"][0] == badge and visitors.citations_valid == visitors.citations_shown > 0
    if parking_in_evidence := [c for c in visitors.chunks["evidence"] if c == _chunk(kb, "parking.md").id]:
        assert visitors.hard_negatives_in_evidence == parking_in_evidence
    s = run.summary
    assert (s["questions"], s["answerable"], s["should_refuse"], s["errors"]) == (3, 2, 1, 0)
    assert s["retrieval"]["chunk"]["dense"]["recall@1"] == 1.0 and s["retrieval"]["chunk"]["dense"]["n"] == 2
    refusal = s["refusal"]
    assert refusal["total"] == 3 and refusal["should_refuse"] == 1
    assert refusal["correct_refusals"] == int(salary.refused)
    assert refusal["false_refusals"] == int(visitors.refused) + int(lunch.refused)
    assert run.goldset == "office-gold" and len(run.goldset_hash) == 64
    assert run.config_fingerprint == kb.settings.fingerprint() and run.index_revision == kb.index_revision
    assert conversations(kb) == []  # evaluation stays out of the chat history
    stored = list_runs(kb)
    assert [r.id for r in stored] == [run.id] and stored[0].questions == 3
    assert load_run(kb, run.id).to_dict() == run.to_dict()
    assert load_run(kb, run.id[:6]).id == run.id  # a unique prefix is enough
    with pytest.raises(RunNotFound):
        load_run(kb, "nope")
    assert "chunk level" in run_text(run) and "rerank" in run_text(run)


def test_exports(kb, gold):
    run = run_goldset(kb, gold, answers=False)
    rows = list(csv.DictReader(io.StringIO(to_csv(run))))
    assert [r["id"] for r in rows] == ["visitors", "lunch", "salary"]
    assert rows[0]["chunk.dense.recall@1"] == "1.0" and rows[0]["doc.rrf.ndcg@10"] == "1.0"
    assert rows[2]["chunk.dense.recall@1"] == "" and rows[2]["should_refuse"] == "True"
    assert rows[0]["kind"] == "retrieval" and rows[0]["trace_id"] == run.questions[0].trace_id
    assert json.loads(to_json(run)) == run.to_dict()
    assert EvalRun.from_dict(json.loads(to_json(run))).to_dict() == run.to_dict()


def test_compare_real_runs(kb, gold):
    a = run_goldset(kb, gold, answers=False)
    b = run_goldset(kb, gold, kb.settings.replace(top_n=1), answers=False)
    cmp = compare_runs(a, b, metric="recall@1", stage="rerank")
    assert cmp.settings_changed == {"top_n": (5, 1)} and cmp.same_goldset and not cmp.index_changed
    assert cmp.level == "chunk"
    assert [q.outcome for q in cmp.questions] == ["tie", "tie", "n/a"]
    assert cmp.delta("recall@1", "dense", "chunk").delta == 0.0
    visitors = cmp.questions[0]
    if a.questions[0].chunks["evidence"] and b.questions[0].chunks["evidence"]:
        assert b.questions[0].chunks["evidence"] == [_chunk(kb, "visitors.md").id]
        assert visitors.entered == [] and set(visitors.left) == set(a.questions[0].chunks["evidence"][1:])
        assert visitors.left_relevant == []
    assert "top_n: 5 -> 1" in comparison_text(cmp)


def _result(qid: str, value: float | None, evidence: list[str], relevant: dict[str, int], refused=False):
    metrics = {} if value is None else {"chunk": {"evidence": {"ndcg@10": value}}}
    return QuestionResult(
        id=qid, question=qid, chunks={"evidence": evidence}, docs={"evidence": []},
        relevant_chunks=relevant, metrics=metrics, refused=refused, should_refuse=value is None,
    )  # fmt: skip


def _run(run_id: str, questions, top_n: int) -> EvalRun:
    summary = {
        "retrieval": {
            "chunk": {
                "evidence": {"ndcg@10": sum(q.metric("ndcg@10", level="chunk") or 0 for q in questions) / 3, "n": 3}
            }
        }
    }
    return EvalRun(
        run_id, "kb", "g", "h", {"top_n": top_n}, "fp", 1, "2025-01-01", questions=questions, summary=summary
    )


def test_compare_hand_built_runs_exactly():
    rel = {"d:1:1:0": 1}
    a = _run("a", [
        _result("up", 0.5, ["x:1:1:0", "d:1:1:0"], rel),
        _result("down", 1.0, ["d:1:1:0"], rel),
        _result("same", 1.0, ["d:1:1:0"], rel),
        _result("refuse", None, [], {}, refused=True),
        _result("gone", 1.0, [], rel),
    ], top_n=5)  # fmt: skip
    b = _run("b", [
        _result("up", 1.0, ["d:1:1:0"], rel),
        _result("down", 0.0, ["y:1:1:0"], rel),
        _result("same", 1.0, ["d:1:1:0"], rel),
        _result("refuse", None, [], {}, refused=False),
        _result("new", 1.0, [], rel),
    ], top_n=3)  # fmt: skip
    cmp = compare_runs(a, b, metric="ndcg@10", stage="evidence", level="chunk")
    assert [q.id for q in cmp.wins] == ["up"] and [q.id for q in cmp.losses] == ["down"]
    assert [q.id for q in cmp.ties] == ["same"] and cmp.outcomes("n/a")[0].id == "refuse"
    assert (cmp.only_in_a, cmp.only_in_b) == (["gone"], ["new"])
    up, down = cmp.wins[0], cmp.losses[0]
    assert (up.a, up.b, up.delta, up.entered, up.left) == (0.5, 1.0, 0.5, [], ["x:1:1:0"])
    assert (down.entered, down.left, down.left_relevant, down.entered_relevant) == (
        ["y:1:1:0"],
        ["d:1:1:0"],
        ["d:1:1:0"],
        [],
    )
    assert cmp.outcomes("n/a")[0].refusal_changed
    assert cmp.settings_changed == {"top_n": (5, 3)}
    assert cmp.delta("ndcg@10", "evidence", "chunk").delta == pytest.approx((2.0 - 2.5) / 3)
    with pytest.raises(ValueError):
        compare_runs(a, b, stage="nowhere")


def test_builder_round_trip(kb, tmp_path):
    from rag.retrieval.pipeline import retrieve

    path = tmp_path / "gold" / "mine.jsonl"
    question = "Where do bicycles go?"
    trace = retrieve(kb, question)
    bike = next(c for c in trace.candidates if c.doc_name == "parking.md")  # a trace Candidate
    canteen = _chunk(kb, "canteen.md")  # a ChunkRecord
    item = add_judgement(path, question, bike, relevant=True, grade=2)
    assert item.id == "where-do-bicycles-go" and item.relevant == (
        Passage(doc="parking.md", start=bike.char_start, end=bike.char_end, grade=2),
    )
    add_judgement(path, question, canteen, relevant=False)
    loaded = load_goldset(path).items[0]
    assert loaded.relevant == item.relevant and loaded.hard_negatives == (
        Passage(doc="canteen.md", start=canteen.char_start, end=canteen.char_end),
    )
    moved = add_judgement(path, question, bike, relevant=False)  # judging again moves the label
    assert moved.relevant == () and len(moved.hard_negatives) == 2
    add_judgement(path, question, bike, relevant=True)
    add_judgement(path, "新的问题？", canteen, relevant=True)
    gold = load_goldset(path)
    assert [i.id for i in gold.items] == ["where-do-bicycles-go", question_slug("新的问题？")]
    assert question_slug("新的问题？").startswith("q-")
    run = run_goldset(kb, gold, answers=False)  # the labels are usable as they are
    assert run.questions[0].relevant_chunks == {bike.chunk_id: 1}
    assert run.questions[0].metrics["chunk"]["bm25"]["recall@1"] == 1.0
    after = remove_judgement(path, question, canteen)
    assert after.hard_negatives == () and load_goldset(path).items[0] == after
    assert goldset_paths(kb)[0].name == "gold.jsonl"


def test_builder_makes_should_refuse_answerable(kb, tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(json.dumps({"id": "r", "question": "Where is parking?", "should_refuse": True}) + "\n")
    item = add_judgement(path, "Where is parking?", _chunk(kb, "parking.md"), relevant=True)
    assert item.id == "r" and not item.should_refuse and len(item.relevant) == 1
    assert load_goldset(path).items == [item]


def test_import_beir_builds_kb_and_gold(make_kb, tmp_path):
    root = tmp_path / "mini"
    (root / "qrels").mkdir(parents=True)
    corpus = [("d1", "Aspirin", "Aspirin reduces fever."), ("d2", "Zinc", "Zinc helps colds."), ("d3", "", "Iron.")]
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in corpus)
    )
    queries = [{"_id": "q1", "text": "does aspirin reduce fever"}, {"_id": "q2", "text": "zinc and colds"}]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t2\nq2\td3\t0\n")
    kb = make_kb("mini")
    result = import_beir(kb, root, "test")
    assert (result.documents, result.ingested, result.present, result.failed) == (3, 3, 0, [])
    assert [i.id for i in result.gold.items] == ["q1", "q2"] and result.gold.name == "mini-test"
    assert result.gold.items[1].relevant == (Passage(doc="d2.md", grade=2),)
    assert result.gold.items[1].hard_negatives == (Passage(doc="d3.md"),)
    again = import_beir(kb, root, "test")
    assert (again.ingested, again.present) == (0, 3)
    run = run_goldset(kb, again.gold, answers=False)
    assert run.questions[0].docs["bm25"][0] == "d1.md" and run.questions[0].metrics["doc"]["bm25"]["mrr@10"] == 1.0
    assert "chunk" not in run.questions[0].metrics  # whole-document labels: document level only
    small = import_beir(make_kb("mini2"), root, "test", limit=1, name="tiny")
    assert [i.id for i in small.gold.items] == ["q1"] and small.dropped_queries == 1 and small.gold.name == "tiny"


def _cli(home, *args):
    env = os.environ | {"RAG_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "rag", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def test_cli_eval_run_on_demo_gold_set_and_compare(tmp_path):
    home = tmp_path / "home"
    csv_path = tmp_path / "run.csv"
    out = _cli(home, "eval", "run", "data/demo/gold-tune.jsonl", "--kb", "demo", "--no-answers", "--csv", str(csv_path))
    assert out.returncode == 0, out.stderr
    for text in ("chunk level", "doc level", "evidence", "refusal", "run id:"):
        assert text in out.stdout
    run_id = out.stdout.rsplit("run id: ", 1)[1].split()[0]
    assert len(list(csv.DictReader(csv_path.open()))) == len(load_goldset(ROOT / "data/demo/gold-tune.jsonl"))
    demo = ["data/demo/gold-tune.jsonl", "--kb", "demo", "--no-answers"]
    again = _cli(home, "eval", "run", *demo, "--limit", "5", "--config", "top_n=2")
    assert again.returncode == 0, again.stderr
    other = again.stdout.rsplit("run id: ", 1)[1].split()[0]
    cmp = _cli(home, "eval", "compare", run_id, other, "--kb", "demo")
    assert cmp.returncode == 0, cmp.stderr
    assert "top_n: 5 -> 2" in cmp.stdout and "wins" in cmp.stdout


BAD_LINE = '{"id": "b", "question": "Why?", "answer": "x"}'


@pytest.mark.parametrize(
    ("lines", "args", "message"),
    [
        (2, ["--config", "top_n=2"], "line 2: field 'answer' is not part of the format"),
        (1, ["--config", "no_such_setting=1"], "unknown setting"),
        (1, ["--config", "top_n"], "KEY=VALUE"),
    ],
)
def test_cli_eval_errors_exit_2_without_traceback(tmp_path, lines, args, message):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([json.dumps({"id": "a", "question": "Where?"}), BAD_LINE][:lines]) + "\n")
    out = _cli(tmp_path / "home", "eval", "run", str(bad), "--kb", "demo", *args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert message in out.stderr and "Traceback" not in out.stderr


def test_a_false_refusal_counts_whether_the_closest_passages_showed_the_answer(make_kb):
    """On a real KB at the shipped thresholds: the question names a word the documents never use
    ('sabbatical'), so it is refused though the leave document answers it (a false refusal by
    this gold item); Chat's closest passages still show that document, and the run says so."""
    kb = make_kb("leave-words")
    assert kb.ingest_file("leave.md", b"# Leave\n\nFull-time employees get 25 days of paid annual leave a year.\n").ok
    assert kb.ingest_file("parking.md", DOCS["parking.md"].encode()).ok
    item = {
        "id": "sabbatical",
        "question": "How many days of paid sabbatical do full-time employees get?",
        "relevant": [{"doc": "leave.md", "quote": "25 days of paid annual leave", "grade": 2}],
    }
    run = run_goldset(kb, parse_goldset([json.dumps(item)], name="own-words"))
    (q,) = run.questions
    assert q.refused and q.presented == [] and q.on_screen[0] == _chunk(kb, "leave.md").id
    assert q.gold_on_screen is True
    r = run.summary["refusal"]
    assert (r["false_refusals"], r["false_refusals_labelled"], r["false_refusals_gold_on_screen"]) == (1, 1, 1)
    assert "false refusals that still showed a relevant passage 1/1" in run_text(run)


def test_false_refusals_on_screen_count_on_hand_built_results():
    from rag.eval.runs.summary import summarize

    def result(qid: str, refused: bool, shown: bool | None, should_refuse: bool = False) -> QuestionResult:
        return QuestionResult(qid, qid, should_refuse=should_refuse, refused=refused, gold_on_screen=shown)

    qs = [result("a", True, True), result("b", True, False), result("c", True, None), result("d", False, True)]
    qs.append(result("e", True, None, should_refuse=True))
    r = summarize(qs)["refusal"]
    assert (r["false_refusals"], r["false_refusals_labelled"], r["false_refusals_gold_on_screen"]) == (3, 2, 1)
