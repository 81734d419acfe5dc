"""The Chroma client a process shares, embedded or ``chroma run`` server, and how it meets faults.

``chroma_client`` makes one client per data dir and server (cached; ``forget_client`` drops it
after a lost connection). In server mode it sends a bounded heartbeat first, so a server that is
down or refuses the token is a ``StoreUnavailable`` with its fix, and bounds every request with
``chroma_timeout_s``. In embedded mode it takes a lock file, since embedded Chroma is safe for one
process at a time. ``settled`` repeats a read that raced another client's write.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

import chromadb
import httpx
from chromadb.config import Settings as ChromaSettings
from chromadb.errors import InternalError

from rag.config import Settings
from rag.errors import StoreUnavailable, VectorIndexDamaged

log = logging.getLogger(__name__)
_clients: dict[tuple, chromadb.api.ClientAPI] = {}
_lock = threading.Lock()
_store_locks: dict[Path, IO[str]] = {}  # embedded stores this process owns (held until exit)
PREFLIGHT_TIMEOUT_S = 10.0  # a server that doesn't answer its heartbeat in this time is "down"
# A read racing another client's write of the same collection can find its HNSW segment not yet
# on disk (chroma-core/chroma#4212); it settles within a flush, so the read is repeated. One that
# never settles is a damaged index (a kill while Chroma wrote it): ``VectorIndexDamaged``.
SETTLING = "hnsw segment reader"
SETTLE_DELAYS_S = (0.05, 0.2, 0.5, 1.0)
T = TypeVar("T")


def chroma_client(settings: Settings) -> chromadb.api.ClientAPI:
    """A cached client for these settings. Raises StoreUnavailable when a server can't be reached."""
    key = (str(settings.home), settings.chroma_host, settings.chroma_port, settings.chroma_token, settings.chroma_ssl)
    with _lock:
        client = _clients.get(key)
        if client is None:
            client = _make_client(settings)
            _clients[key] = client
    return client


def _make_client(settings: Settings) -> chromadb.api.ClientAPI:
    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if not settings.server_mode:
        path = settings.home / "chroma"
        path.mkdir(parents=True, exist_ok=True)
        _own_embedded_store(path)
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)
    headers = {"Authorization": f"Bearer {settings.chroma_token}"} if settings.chroma_token else None
    _preflight(settings, headers or {})
    try:
        client = chromadb.HttpClient(
            host=settings.chroma_host,
            port=settings.chroma_port,
            ssl=settings.chroma_ssl,
            headers=headers,
            settings=chroma_settings,
        )
        _bound_requests(client, settings.chroma_timeout_s)
        client.heartbeat()
    except Exception as exc:  # chromadb raises ValueError/ConnectError/etc. depending on transport
        raise StoreUnavailable(
            f"Cannot reach the Chroma server at {settings.chroma_host}:{settings.chroma_port} ({type(exc).__name__}: {exc})."
        ) from exc
    return client


def _own_embedded_store(path: Path) -> None:
    """Refuse a second process on one embedded store: Chroma's embedded mode is single-process.

    Measured with chromadb 1.5.9: two processes writing one PersistentClient directory lose
    vectors from the HNSW index ("Error getting embedding"), and a reader process beside a
    writer gets "Error creating hnsw segment reader" and partial results.
    """
    key = path.resolve()
    if key in _store_locks:
        return
    fh = open(path.parent / "chroma.lock", "a+")  # noqa: SIM115 - held open for the process lifetime
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "unknown"
        fh.close()
        raise StoreUnavailable(
            f"The embedded vector store in {path} is open in another process (pid {holder}); "
            "embedded Chroma is safe for one process at a time.",
            fix=(
                "Close the other app or command, or run a Chroma server (`chroma run --path DIR`) and set "
                "RAG_CHROMA_HOST and RAG_CHROMA_PORT so that several processes can share it."
            ),
        ) from None
    fh.seek(0)
    fh.truncate()
    fh.write(str(os.getpid()))
    fh.flush()
    _store_locks[key] = fh


def _preflight(settings: Settings, headers: dict[str, str]) -> None:
    """One bounded heartbeat: 'down' and 'token refused' each get their own message and fix."""
    where = f"{settings.chroma_host}:{settings.chroma_port}"
    url = f"{'https' if settings.chroma_ssl else 'http'}://{where}/api/v2/heartbeat"
    try:
        response = httpx.get(url, headers=headers, timeout=PREFLIGHT_TIMEOUT_S)
    except httpx.HTTPError as exc:
        raise StoreUnavailable(f"Cannot reach the Chroma server at {where} ({type(exc).__name__}: {exc}).") from exc
    if response.status_code in (401, 403):
        sent = "the token in RAG_CHROMA_TOKEN was refused" if settings.chroma_token else "no token was sent"
        raise StoreUnavailable(
            f"The Chroma server at {where} requires authentication (HTTP {response.status_code}): {sent}.",
            fix="Set RAG_CHROMA_TOKEN to the token that the server (or its auth proxy) expects.",
        )


def _bound_requests(client: chromadb.api.ClientAPI, timeout_s: float) -> None:
    """Give the HTTP client's session a timeout (chromadb creates it with none, so a hung server
    would hang every query). A timeout is an ``httpx.TransportError``: ``VectorStore._call``
    reconnects and retries once, then reports ``StoreUnavailable``."""
    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, PREFLIGHT_TIMEOUT_S))
    else:  # a chromadb release that moved it: say so rather than silently run unbounded
        log.warning("Chroma client has no httpx session to bound; requests run without a timeout")


def forget_client(settings: Settings) -> None:
    """Drop a cached client (after a server restart) so the next call reconnects."""
    key = (str(settings.home), settings.chroma_host, settings.chroma_port, settings.chroma_token, settings.chroma_ssl)
    with _lock:
        _clients.pop(key, None)


def settled(op: str, fn: Callable[[], T], kb: str = "") -> T:
    """``fn()``, repeated after a short wait while Chroma says a segment is still being written;
    ``VectorIndexDamaged`` (naming knowledge base ``kb``) when it still says so after the last wait."""
    for delay in SETTLE_DELAYS_S:
        try:
            return fn()
        except InternalError as exc:
            if SETTLING not in str(exc):
                raise
            log.warning("Chroma %s found a segment still being written (%s); again in %.2f s", op, exc, delay)
        time.sleep(delay)
    try:
        return fn()
    except InternalError as exc:
        if SETTLING not in str(exc):
            raise
        raise VectorIndexDamaged(kb, f"{op}: {exc}") from exc
