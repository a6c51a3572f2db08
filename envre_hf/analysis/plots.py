"""Figures, drawn with matplotlib's Agg backend (no display needed)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..atomic import atomic_path
from .entity_count import EntityCountCurve
from .rationale_map import MAPCurve


def plot_entity_count(curves: Mapping[str, EntityCountCurve], path: str | os.PathLike, title: str | None = None) -> Path:
    """Figure 4: F1 (%) against entities per document, one colour per set, points and fitted lines."""
    with _figure(path, (6, 4)) as ax:
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
    return Path(path)


def plot_map_curves(curves: Sequence[MAPCurve], path: str | os.PathLike, title: str | None = None) -> Path:
    """The study's Figure 5: MAP(K) of attributed words against human rationales, one line per model."""
    with _figure(path, (6, 4)) as ax:
        for i, curve in enumerate(curves):
            label = f"{curve.label or f'model {i + 1}'} ({curve.facts} facts, {curve.documents} docs)"
            ax.plot(curve.k, curve.map, marker="o", markersize=3, color=f"C{i}", label=label)
        ax.set_xlabel("K (top-K attributed words)")
        ax.set_ylabel("MAP(K)")
        ax.set_title(title or "Attributed words vs human rationales (DocRED-HWE)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return Path(path)


def plot_flip_rates(rates: Mapping[str, float | None], path: str | os.PathLike, title: str | None = None) -> Path:
    """``envre probe``: flip rate (%) per relation, one horizontal bar each, highest on top."""
    bars = sorted(((label, rate) for label, rate in rates.items() if rate is not None), key=lambda item: item[1])
    with _figure(path, (7, 1.2 + 0.22 * max(len(bars), 1))) as ax:
        ax.barh([label for label, _ in bars], [rate * 100 for _, rate in bars], color="C3")
        ax.set_xlabel("original predictions lost per renamed copy (%)")
        ax.set_xlim(0, 100)
        ax.set_title(title or "Flip rate by relation (facts predicted on the originals)", fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
    return Path(path)


def plot_systems(
    systems: Mapping[str, Mapping[str, float | None]], path: str | os.PathLike, title: str | None = None
) -> Path:
    """``envre probe --compare``: per system (a row group), one bar per measure it has (%), in the order given."""
    measures = list(dict.fromkeys(m for values in systems.values() for m in values))
    height = 0.8 / max(len(measures), 1)
    names = list(systems)
    with _figure(path, (7, 1.4 + 0.25 * max(len(names), 1) * max(len(measures), 1))) as ax:
        for j, measure in enumerate(measures):
            rows = [(i, systems[name].get(measure)) for i, name in enumerate(names)]
            rows = [(i, value) for i, value in rows if value is not None]
            positions, values = [i + j * height for i, _ in rows], [100 * value for _, value in rows]
            ax.barh(positions, values, height, label=measure, color=f"C{j}")
        ax.set_yticks([i + height * (len(measures) - 1) / 2 for i in range(len(names))], names)
        ax.invert_yaxis()
        ax.set_xlabel("%")
        ax.set_xlim(0, 100)
        ax.set_title(title or "Name reliance of the probed systems", fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    return Path(path)


@contextmanager
def _figure(path: str | os.PathLike, figsize: tuple[float, float]) -> Iterator[Any]:
    """Axes of a new Agg figure; when the block ends, the figure is laid out and saved atomically as PNG to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize, dpi=120)
    try:
        yield ax
        fig.tight_layout()
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png")
    finally:
        plt.close(fig)
