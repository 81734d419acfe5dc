"""Language resources the decision reads: synonyms (WordNet, Cilin) and everyday words."""
