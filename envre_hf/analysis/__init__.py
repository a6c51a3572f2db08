"""Analyses of original vs renamed benchmarks (the study's Tables 1-5 and Figure 4), a markdown report and plots;
word attributions and their MAP(K) against human rationales (Figure 5: ``attribution``, ``rationale_map``)."""

from .entity_count import EntityCountCurve, f1_by_entity_count
from .robustness import RobustnessReport, model_robustness_report, performance_table, robustness_report
from .plots import plot_entity_count, plot_map_curves
from .popularity import PopularityResult, popularity_pairs, popularity_quartiles
from .rationale_map import MAPCurve, map_curve, map_terms
from .report import render_markdown, run_analyses, write_report
from .substitution_table import substitution_table
from .train_overlap import overlap_table, train_name_overlap

__all__ = [
    "EntityCountCurve",
    "MAPCurve",
    "PopularityResult",
    "RobustnessReport",
    "f1_by_entity_count",
    "map_curve",
    "map_terms",
    "model_robustness_report",
    "overlap_table",
    "performance_table",
    "plot_entity_count",
    "plot_map_curves",
    "popularity_pairs",
    "popularity_quartiles",
    "render_markdown",
    "robustness_report",
    "run_analyses",
    "substitution_table",
    "train_name_overlap",
    "write_report",
]
