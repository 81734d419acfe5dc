"""Evaluation: gold sets (``gold/``: format, checks, label anchoring, the Inspector's builder),
runs and comparisons (``runs/``: the API the Evaluation page and the CLI use), metrics
(``metrics``), BEIR import (``beir``, ``beir_import``) and benchmark data by name (``datasets``). See docs/GOLDSETS.md for the gold
format and the run API."""
