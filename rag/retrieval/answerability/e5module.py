"""The e5-small encoder as torch modules: in the kernel (``rag.e5module``) beside the port that
builds it; re-exported here for the readers."""

from rag.e5module import E5Encoder, E5Layer, Precision, native_bf16

__all__ = ["E5Encoder", "E5Layer", "Precision", "native_bf16"]
