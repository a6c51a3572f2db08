"""Stage 2: documents -> encoder inputs (entity markers, pairs, multi-hot labels) and batching."""

from .batching import dataset_lengths, feature_length, length_sorted_batches
from .collator import DocRECollator
from .featurize import DEFAULT_MARKER, entity_pairs, featurize_aligned, featurize_document, multi_hot_labels, pair_index
