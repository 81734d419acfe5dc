"""Where the readers' weights are, and how each shipped reader is loaded once per process."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

# The fine-tuned weights: outside the code package, listed in MODELS_DIR / "MANIFEST.json".
MODELS_DIR = Path(__file__).resolve().parents[2] / "models"


class LoadOnce:
    """A model loaded at most once per process and precision setting, under a lock: a caller
    asking while the background :meth:`warm_up` loads it waits for that one load instead of
    starting another. ``load(precision)`` returns the model, or None when it can't be had (said
    in the trace). The precision is the caller's ``Settings.reader_precision``."""

    def __init__(self, load: Callable[[str], object], thread_name: str) -> None:
        self._load, self._thread_name = load, thread_name
        self._lock = threading.Lock()
        self._loaded: dict[str, object] = {}

    def get(self, precision: str):
        with self._lock:
            if precision not in self._loaded:
                self._loaded[precision] = self._load(precision)
            return self._loaded[precision]

    def is_loaded(self, precision: str | None = None) -> bool:
        """Whether this process has loaded it (or found it missing) already, in ``precision``
        (None: in any)."""
        return bool(self._loaded) if precision is None else precision in self._loaded

    def forget(self) -> None:
        """Drop it: the next :meth:`get` loads it again (tests)."""
        with self._lock:
            self._loaded.clear()

    def warm_up(self, precision: str) -> threading.Thread:
        """Load it in a background thread (the app starts this, so the first question that needs
        it does not wait for torch and the weights)."""
        thread = threading.Thread(target=self.get, args=(precision,), name=self._thread_name, daemon=True)
        thread.start()
        return thread
