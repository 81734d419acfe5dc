"""Evaluation: gold sets (``gold/``: format, checks, label anchoring, the Inspector's builder),
runs and comparisons (``runs/``: the API the Evaluation page and the CLI use), metrics
(``metrics``) and BEIR import (``beir``, ``beir_import``). See docs/GOLDSETS.md for the gold
format and the run API."""
