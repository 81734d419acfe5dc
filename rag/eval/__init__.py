"""Evaluation: gold sets (``goldset``, ``goldcheck``), label anchoring (``anchoring``), metrics
(``metrics``), BEIR import (``beir``, ``beir_import``), runs and comparisons (``runs``: the API the
Evaluation page and the CLI use), the Inspector's gold-set builder (``builder``) and the benchmark
report (``report``). See docs/GOLDSETS.md for the gold format and the run API."""
