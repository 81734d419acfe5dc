"""Evaluation: gold sets (``goldset``, ``goldcheck``), label anchoring (``anchoring``),
metrics (``metrics``) and BEIR import (``beir``). See docs/GOLDSETS.md for the gold format."""
