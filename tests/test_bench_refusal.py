"""`bench refusal`: the line format, the trade-off curve, the data lookup and the fit's guard."""

from __future__ import annotations

import pytest

from rag.bench.fit_answerability import auc, fit, operating_point
from rag.bench.refusal import SETS, Row, SetResult, set_folder
from rag.config import Settings
from rag.errors import RagError


def _row(condition: str, refused: bool, p: float, set_name: str = "scifact", qid: str = "1") -> Row:
    return Row(set_name, qid, condition, "q", refused, "reject" if refused else "answer", p, "latin", {}, [], 10.0)


def test_line_has_exactly_the_issue_form():
    r = SetResult("rgb-zh")
    r.rows = [_row("removed", True, 0.1), _row("removed", False, 0.7), _row("removed", True, 0.2)]
    r.rows += [_row("as_is", False, 0.9), _row("as_is", True, 0.3)]
    assert r.line() == ("refusal rgb-zh: unanswerable refused 2/3 (0.667) · answerable refused 1/2 (0.500)")
    curve = dict((t, (u, a)) for t, u, a in r.curve((0.25, 0.5, 0.8)))
    assert curve[0.25] == (pytest.approx(2 / 3), 0.0)
    assert curve[0.5] == (pytest.approx(2 / 3), 0.5)
    assert curve[0.8] == (1.0, 0.5)


def test_missing_data_says_where_to_get_it(tmp_path):
    with pytest.raises(RagError) as err:
        set_folder(SETS["rgb-zh"], Settings(bench_data=tmp_path))
    assert "RAG_BENCH_DATA" in err.value.fix and "rgb-zh" in str(err.value)


def test_auc_and_operating_point_on_known_values():
    import numpy as np

    p = np.array([0.9, 0.8, 0.4, 0.3, 0.6, 0.2])
    y = np.array([1, 1, 1, 0, 0, 0])
    assert auc(p, y) == pytest.approx(8 / 9)  # 8 of 9 (answerable, unanswerable) pairs ordered right
    t, right, false = operating_point(p, y, max_false=0.34)
    assert (t, right, false) == (0.8, 1.0, pytest.approx(1 / 3))  # at 0.8 all unanswerable and 1/3 answerable refused


def test_fit_refuses_test_data():
    rows = [_row("as_is", False, 0.9, "rgb-zh"), _row("removed", True, 0.1, "rgb-zh")]
    with pytest.raises(SystemExit, match="not training sets"):
        fit(rows)
