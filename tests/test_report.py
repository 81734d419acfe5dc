"""`python -m rag report`'s writing: the status table, kept sections carried over, the plots."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.bench.refusal_rows import Row, SetResult, dump
from rag.bench.report import STAGES_PNG, TRADEOFF_PNG, Section, dump_curves, kept_status, write
from rag.bench.report_plots import Curve, curve, plot_tradeoff
from rag.config import Settings

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

KEPT = """<!-- kept: ingest -->
## Ingest

<!-- status: Ingest | SciFact, 1,000 abstracts | 29.7 chunks/s | >= 0.9 of the raw encoder | `python -m rag bench ingest scifact --limit 1000` -->
Measured by `python -m rag bench ingest scifact --limit 1000`.
<!-- /kept: ingest -->"""


def _section() -> Section:
    status = [["SciFact retrieval", "SciFact test (report only)", "nDCG@10 0.722", "none set", "`bench beir`"]]
    curves = [Curve("set", answerable=(0.9, 0.8, 0.3), unanswerable=(0.1, 0.6))]
    return Section("## SciFact\n\nmeasured table", status, {"dense": 0.672, "reranked": 0.722}, curves)


def test_write_keeps_kept_sections_and_their_status_rows(tmp_path):
    out = tmp_path / "docs" / "BENCHMARKS.md"
    out.parent.mkdir()
    out.write_text(f"# Benchmarks\n\nan old generated paragraph\n\n{KEPT}\n\nold splits\n", encoding="utf-8")
    write(out, Settings(home=tmp_path / "home"), tmp_path / "bench", {"scifact": _section()}, [])
    text = out.read_text(encoding="utf-8")
    assert KEPT in text  # carried over byte for byte
    assert "an old generated paragraph" not in text and "old splits" not in text
    status = text[text.index("## Status") : text.index("## Reproduce")]
    assert "| SciFact retrieval | SciFact test (report only) | nDCG@10 0.722 |" in status
    assert "| Ingest | SciFact, 1,000 abstracts | 29.7 chunks/s | >= 0.9 of the raw encoder |" in status
    assert f"(img/{TRADEOFF_PNG})" in status and f"(img/{STAGES_PNG})" in status
    for name in (TRADEOFF_PNG, STAGES_PNG):
        assert (out.parent / "img" / name).read_bytes()[:8] == PNG_MAGIC
    assert text.index("## SciFact") < text.index("## Ingest") < text.index("## Which split was used for what")
    assert "session" not in text.lower()


def test_a_section_not_measured_this_time_is_carried_over(tmp_path):
    out = tmp_path / "BENCHMARKS.md"
    settings = Settings(home=tmp_path / "home")
    write(out, settings, tmp_path, {"scifact": _section()}, [])
    demo = Section("## Demo gold set\n\ndemo table", [["Demo", "demo test", "1.000", "1.0", "`eval run`"]])
    write(out, settings, tmp_path, {"demo": demo}, [])  # like `report --only demo`
    text = out.read_text(encoding="utf-8")
    assert "measured table" in text and "demo table" in text
    assert text.index("## SciFact") < text.index("## Demo gold set")  # in SECTIONS order
    status = text[text.index("## Status") : text.index("## Reproduce")]
    assert "| SciFact retrieval |" in status and "| Demo | demo test |" in status
    assert f"(img/{STAGES_PNG})" in status  # drawn by the first run, still there


def test_kept_status_pads_short_rows():
    rows = kept_status(["<!-- kept: x --><!-- status: A | B --><!-- /kept: x -->"])
    assert rows == [["A", "B", "", "", ""]]


def test_curve_counts_refusals_below_the_threshold():
    c = curve("s", [(0.9, False), (0.3, False), (0.2, True), (0.7, True), (None, True)])
    assert c is not None and c.unanswerable == (0.2, 0.7)  # the unread question is left out
    assert c.at(0.5) == (0.5, 0.5)  # answerable 0.3 refused; unanswerable 0.2 refused
    assert c.at(1.0) == (1.0, 1.0) and c.at(0.0) == (0.0, 0.0)
    assert curve("only answerable", [(0.9, False)]) is None


def test_dump_curves_reads_bench_refusal_dumps(tmp_path):
    result = SetResult("cmrc-trial")
    for qid, (p_as_is, p_removed) in enumerate([(0.9, 0.2), (0.4, 0.6)]):
        result.rows += [
            Row("cmrc-trial", str(qid), "as_is", "q", p_as_is < 0.5, "", p_as_is, "cjk", {}, [], 1.0),
            Row("cmrc-trial", str(qid), "removed", "q", p_removed < 0.5, "", p_removed, "cjk", {}, [], 1.0),
        ]
    path = tmp_path / "d.jsonl"
    dump([result], path)
    (c,) = dump_curves([path])
    assert c.label == "cmrc-trial (bench refusal)"
    assert sorted(c.answerable) == [0.4, 0.9] and sorted(c.unanswerable) == [0.2, 0.6]


def test_plot_needs_a_curve(tmp_path):
    with pytest.raises(ValueError, match="at least one curve"):
        plot_tradeoff([], Path(tmp_path / "x.png"))


def test_the_status_cell_reads_the_stages_bench_beir_measures():
    """The cell is keyed like ``BeirReport.table()`` (``rag.bench.beir.STAGES``): a renamed stage
    shows up here as a dash, not as a silently missing figure."""
    from rag.bench.beir import STAGES
    from rag.bench.report import retrieval_cell

    ndcg = dict(zip(STAGES, (0.672, 0.689, 0.716, 0.722), strict=True))
    assert retrieval_cell(ndcg) == "reranked nDCG@10 **0.722** (dense 0.672, BM25 0.689, RRF 0.716)"
    assert "—" in retrieval_cell({})


def test_the_demo_test_row_says_whether_its_goal_is_met():
    from types import SimpleNamespace

    from rag.bench.report_sections import demo_status

    def row(key_facts: float, false_refusals: int) -> list[str]:
        refusal = {"total": 48, "should_refuse": 8, "correct_refusals": 4, "false_refusals": false_refusals}
        run = SimpleNamespace(summary={"answer_quality": {"key_fact_recall": key_facts}, "refusal": refusal})
        return demo_status(run, "gold-test.jsonl", "test", "report only")

    assert row(0.6, 9)[3] == "key facts 1.0, no false refusal (not met)"
    assert row(1.0, 0)[3] == "key facts 1.0, no false refusal"
    assert "9/40 that must not" in row(0.6, 9)[2]


def test_an_ndcg_goal_cell_says_met_or_not():
    from rag.bench.report import ndcg_goal_cell

    assert ndcg_goal_cell(0.771, 0.75) == "reranked nDCG@10 >= 0.75 (met)"
    assert ndcg_goal_cell(0.713, 0.75).endswith("(not met)") and ndcg_goal_cell(None, 0.75).endswith("(not met)")


def test_a_section_carried_over_keeps_its_plot_data(tmp_path):
    """An ``--only`` run redraws the plots with the sections it did not measure: their nDCG and
    curves travel in the kept block."""
    from rag.bench.report import plot_data

    section = _section()
    carried = plot_data(section.kept("scifact"))
    assert carried.ndcg == {"dense": 0.672, "reranked": 0.722}
    assert carried.curves == section.curves
    out = tmp_path / "docs" / "BENCHMARKS.md"
    out.parent.mkdir()
    write(out, Settings(home=tmp_path / "home"), tmp_path / "bench", {"scifact": section}, [])
    demo = Section("## Demo\n\nmeasured", [], {}, [Curve("demo test", answerable=(0.9, 0.7), unanswerable=(0.2,))])
    (out.parent / "img" / "ndcg-per-stage.png").unlink()  # the demo has no nDCG: only the carried SciFact can redraw it
    write(out, Settings(home=tmp_path / "home"), tmp_path / "bench", {"demo": demo}, [])
    text = out.read_text(encoding="utf-8")
    assert "## SciFact" in text and "## Demo" in text
    assert plot_data(text[text.index("<!-- kept: scifact -->") :]).ndcg["reranked"] == 0.722
    assert (out.parent / "img" / "ndcg-per-stage.png").exists() and (
        out.parent / "img" / "refusal-tradeoff.png"
    ).exists()
