"""Typed errors. Each message says what happened and what the user can do about it."""

from __future__ import annotations


class RagError(Exception):
    """Base class for problems a user can fix. ``str(err)`` is shown to the user as-is."""

    fix: str = ""

    def __init__(self, message: str, fix: str | None = None) -> None:
        self.fix = fix if fix is not None else self.fix
        super().__init__(f"{message} {self.fix}".strip())
        self.message = message


class ConfigError(RagError):
    """A setting is invalid or contradicts another."""

    fix = "Check the RAG_* environment variables (see README, 'Settings')."


class UnsupportedFileType(RagError):
    fix = "Upload one of: PDF, DOCX, PPTX, HTML, Markdown, TXT, CSV."


class ParseError(RagError):
    """The file could not be read as the type its name claims."""

    fix = "Check that the file opens in its usual program, re-export it, and upload again."


class EmptyDocument(RagError):
    fix = "The file has no extractable text. For scanned PDFs, run OCR first and upload the result."


class LimitExceeded(RagError):
    """A configured cap (file size, pages, chunks, query length, time) was hit."""

    fix = "Split the input into smaller parts, or raise the limit in settings if you trust it."


class UnsafeInput(RagError):
    """Input that looks hostile: path traversal, decompression bombs and the like."""

    fix = "Rename or re-create the file and upload it again."


class EmbeddingModelMismatch(RagError):
    """The index was built with a different embedding model or dimension than is configured now."""

    def __init__(self, kb: str, index_model: str, index_dim: int, cfg_model: str, cfg_dim: int) -> None:
        self.index_model, self.index_dim = index_model, index_dim
        self.cfg_model, self.cfg_dim = cfg_model, cfg_dim
        super().__init__(
            f"Knowledge base '{kb}' was indexed with embedding model '{index_model}' "
            f"({index_dim}-d), but the configured embedder is '{cfg_model}' ({cfg_dim}-d).",
            fix=(
                f"Either set RAG_EMBED_MODEL back to '{index_model}', or re-index: "
                f"`python -m rag reindex --kb {kb}` (re-embeds every document with the new model)."
            ),
        )


class ModelUnavailable(RagError):
    fix = "Give a local path to the model, or run on a machine that can reach the model hub."


class StoreUnavailable(RagError):
    """The vector store (e.g. a Chroma server) cannot be reached."""

    fix = (
        "Start the Chroma server (`chroma run --host HOST --port PORT --path DIR`) or unset "
        "RAG_CHROMA_HOST to use the embedded store."
    )


class VectorIndexDamaged(StoreUnavailable):
    """Chroma cannot read a collection's vector index (a process killed while Chroma wrote it).
    The catalog keeps every text, so the vectors can be rebuilt from it."""

    def __init__(self, kb: str, detail: str) -> None:
        self.kb = kb
        super().__init__(
            f"Chroma cannot read the vector index of knowledge base '{kb}' ({detail}).",
            fix=(
                f"Rebuild its vectors from the catalog's texts: `python -m rag reindex --kb {kb} --full` "
                "(opening the knowledge base does it by itself while no other process writes to it)."
            ),
        )


class KnowledgeBaseNotFound(RagError):
    fix = "Create it by ingesting a document: `python -m rag ingest FILE --kb NAME`."


class DocumentNotFound(RagError):
    fix = "List the documents with `python -m rag docs --kb NAME` and use one of those ids."


class InvalidQuery(RagError):
    fix = "Type a question of a few words."


class GoldSetError(RagError):
    """A gold-set file is malformed. The message names the line."""

    fix = "Fix the named line (see docs/GOLDSETS.md for the format) and load it again."


class LLMError(RagError):
    fix = "Check the LLM settings (RAG_LLM, RAG_LLM_BASE_URL, RAG_LLM_MODEL) or use RAG_LLM=none."


class DatasetError(RagError):
    """A benchmark dataset folder (BEIR layout) is missing files or has a malformed line."""

    fix = "Point to a BEIR folder holding corpus.jsonl, queries.jsonl and qrels/<split>.tsv (see docs/GOLDSETS.md)."


class LLMOutputError(LLMError):
    """The LLM answered, but not in the shape asked for (e.g. no valid JSON with the needed keys)."""

    fix = "The caller falls back to rules; a larger or instruction-tuned model answers in shape more often."


class BenchDataNotFound(RagError):
    """A benchmark dataset named on the command line is not in the benchmark data folder."""

    fix = "Pass the dataset folder's path, or set RAG_BENCH_DATA to the folder that holds it."


class PermissionDenied(RagError):
    """A principal tried an action their role in a knowledge base does not allow.

    ``str(err)`` names the action, the knowledge base, the role it needs and the role held."""

    def __init__(self, user: str, action: str, kb: str, needed: str, held: str | None) -> None:
        self.user, self.action, self.kb, self.needed, self.held = user, action, kb, needed, held
        has = f"is {held}" if held else "is not a member"
        super().__init__(
            f"'{user}' may not {action} in knowledge base '{kb}': that needs the {needed} role, and '{user}' {has}.",
            fix=f"Ask an owner of '{kb}' to run `python -m rag members --kb {kb} add {user} {needed}`.",
        )


class SignInFailed(RagError):
    """The user name or password given to the built-in user list is wrong (never says which)."""

    fix = "Check the user name and password; an administrator resets one with `python -m rag users add NAME`."
