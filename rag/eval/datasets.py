"""Benchmark datasets by name or path: ``scifact`` means ``$RAG_BENCH_DATA/scifact`` (default
``data/bench/``, ignored by git; the licenses don't allow copying the data into the repository).

A dataset folder holds the BEIR layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``)
itself or in a ``beir/`` subfolder (RGB and CMRC keep their original file beside it).
"""

from __future__ import annotations

from pathlib import Path

from rag.config import Settings
from rag.errors import BenchDataNotFound

# Where each dataset the benchmarks and docs/BENCHMARKS.md use comes from.
SOURCES = {
    "scifact": "BEIR SciFact, https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip "
    "(unzip to scifact/)",
    "rgb-zh": "RGB, https://github.com/chen700564/RGB (data/zh_refine.json), converted to BEIR under rgb-zh/beir/",
    "cmrc2018-trial": "CMRC 2018, https://github.com/ymcui/cmrc2018 (cmrc2018_trial.json), converted to BEIR "
    "under cmrc2018-trial/beir/",
}
BEIR_DATASETS = "https://github.com/beir-cellar/beir (BEIR datasets, one zip each)"


def resolve_dataset(name_or_path: str | Path, settings: Settings | None = None) -> Path:
    """The BEIR folder for a dataset name (looked up in ``settings.bench_data``) or a path."""
    given = Path(name_or_path)
    if given.exists():
        return beir_root(given)
    settings = settings or Settings.from_env()
    root = Path(settings.bench_data)
    if len(given.parts) == 1 and (root / given).exists():
        return beir_root(root / given)
    name = given.name
    where = SOURCES.get(name, f"{BEIR_DATASETS}, or your own data in the BEIR layout")
    raise BenchDataNotFound(
        f"No benchmark data '{name_or_path}': not a folder, and not in {root} (RAG_BENCH_DATA).",
        fix=f"Download it ({where}) into {root / name}/, or point RAG_BENCH_DATA at a folder that holds "
        f"{name}/ (e.g. RAG_BENCH_DATA=../shared/bench), or pass the dataset folder's path.",
    )


def beir_root(folder: Path) -> Path:
    """``folder`` itself when it holds ``corpus.jsonl``, else its ``beir/`` subfolder if that does."""
    if not (folder / "corpus.jsonl").exists() and (folder / "beir" / "corpus.jsonl").exists():
        return folder / "beir"
    return folder


def dataset_name(folder: str | Path) -> str:
    """The benchmark name of a dataset folder, as provenance records it: ``cmrc2018-trial`` for
    ``../shared/bench/cmrc2018-trial/beir`` or ``cmrc2018-trial`` (never the machine's path)."""
    path = Path(folder)
    parts = [p for p in path.parts if p not in ("", ".", "/")]
    if parts and parts[-1] == "beir":
        parts = parts[:-1]
    if not parts or parts[-1] == "..":
        raise ValueError(
            f"{folder}: no dataset name in this path (pass the dataset's folder, e.g. cmrc2018-trial/beir)"
        )
    return parts[-1]
