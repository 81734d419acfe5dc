"""Gold sets: the JSONL format and its checks (``goldset``, ``goldcheck``), anchoring quoted
passages to chunks (``anchoring``), relevance labels per question (``labels``) and the
Inspector's gold-set builder (``builder``)."""
