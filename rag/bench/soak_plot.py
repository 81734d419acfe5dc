"""The soak bench's plot: app and Chroma RSS over time, Chroma restarts and page errors marked."""

from __future__ import annotations

from pathlib import Path


def plot(figures: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = figures["memory"]
    minutes = [s["at_s"] / 60 for s in samples]
    fig, ax = plt.subplots(figsize=(9, 4), dpi=110)
    ax.plot(minutes, [s["app_mb"] for s in samples], label="app (streamlit) RSS", color="tab:blue")
    ax.plot(minutes, [s["chroma_mb"] for s in samples], label="chroma run RSS", color="tab:green")
    for i, r in enumerate(figures["restarts"]):
        ax.axvline(r["at_s"] / 60, color="grey", ls=":", lw=1, label="Chroma restart" if i == 0 else None)
    for kind, color, label in (("error", "tab:red", "error shown"), ("stall", "tab:purple", "page stall")):
        marks = [s["at_s"] / 60 for s in figures["shown"] if (s["kind"] == "stall") == (kind == "stall")]
        for i, at in enumerate(marks):
            ax.axvline(at, color=color, lw=1, alpha=0.6, label=label if i == 0 else None)
    flat = figures["memory_flat"]
    lo, hi = flat["early_window_min"]
    ax.axvspan(lo, hi, color="tab:blue", alpha=0.07, label="early window (2nd sixth)")
    lo, hi = flat["late_window_min"]
    ax.axvspan(lo, hi, color="tab:orange", alpha=0.07, label=f"last sixth ({flat['change']:+.1%})")
    ax.set_xlabel("minutes")
    ax.set_ylabel("resident memory (MB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"soak: {figures['minutes']:.0f} min, two browsers chatting, CLI ingest, Chroma restarts")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
