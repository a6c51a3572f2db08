"""Figures, drawn with matplotlib's Agg backend (no display needed)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..atomic import atomic_path
from .entity_count import EntityCountCurve


def plot_entity_count(curves: Mapping[str, EntityCountCurve], path: str | os.PathLike, title: str | None = None) -> Path:
    """Figure 4: F1 (%) against entities per document, one colour per set, points and fitted lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    try:
        for i, (label, curve) in enumerate(curves.items()):
            color = f"C{i}"
            ax.scatter(curve.n_entities, [f * 100 for f in curve.f1], s=12, color=color, alpha=0.7, label=label)
            if curve.slope is not None and curve.n_entities:
                lo, hi = min(curve.n_entities), max(curve.n_entities)
                ax.plot(
                    [lo, hi],
                    [(curve.slope * x + curve.intercept) * 100 for x in (lo, hi)],
                    color=color,
                    label=f"{label} fit (slope {curve.slope * 100:+.2f} F1 points/entity)",
                )
        ax.set_xlabel("entities per document")
        ax.set_ylabel("F1 (%)")
        ax.set_title(title or "F1 by number of entities")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
    return path
