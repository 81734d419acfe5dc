"""Evaluation runs: a gold set against a knowledge base under one configuration, stored and compared.

``runner`` runs a gold set, ``scoring`` scores one question, ``results`` holds what a run is,
``store`` keeps runs on disk, ``summary``/``compare``/``tables``/``export`` read them back.
"""

from rag.eval.gold.builder import add_judgement, goldset_paths, goldsets_dir, remove_judgement
from rag.eval.runs.compare import QuestionDelta, RunComparison, compare_runs
from rag.eval.runs.export import to_csv, to_json
from rag.eval.runs.results import LEVELS, STAGES, EvalRun, QuestionResult
from rag.eval.runs.runner import goldset_hash, run_goldset
from rag.eval.runs.store import RunInfo, RunNotFound, delete_run, list_runs, load_run

__all__ = [
    "LEVELS",
    "STAGES",
    "EvalRun",
    "QuestionDelta",
    "QuestionResult",
    "RunComparison",
    "RunInfo",
    "RunNotFound",
    "add_judgement",
    "compare_runs",
    "delete_run",
    "goldset_hash",
    "goldset_paths",
    "goldsets_dir",
    "list_runs",
    "load_run",
    "remove_judgement",
    "run_goldset",
    "to_csv",
    "to_json",
]
