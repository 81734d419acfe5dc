"""multilingual-e5-small through torch: the port lives in the kernel (``rag.e5torch``), where the
multilingual embedder that ingest uses can reach it; the readers import it from here as before."""

from rag.e5torch import E5File, E5Header, E5Tokenizer, build_encoder, read_e5, weights_path

__all__ = ["E5File", "E5Header", "E5Tokenizer", "build_encoder", "read_e5", "weights_path"]
