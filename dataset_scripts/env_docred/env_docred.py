"""Env-DocRED: DocRED's validation documents renamed five times (seeds 0-4) by envre-hf.

Reads the parquet files of a dataset folder written by ``envre build`` (``data_dir``), or of the published Hub
repository ``envre/env_docred`` (default ``urls``); ``data_files`` may also name DocRED JSON written with
``envre build --export-json``. See ``dataset_scripts/README.md``.
"""

from __future__ import annotations

from dataset_scripts.common import DocREBuilder
from envre_hf.renaming.card import DOCRED_CITATION, ENV_CITATION

_BASE_URL = "https://huggingface.co/datasets/envre/env_docred/resolve/main/data/"


class EnvDocRED(DocREBuilder):
    """Renamed DocRED copies with provenance (``orig_title``, ``seed``, ``substitutions``)."""

    URLS = {"validation": _BASE_URL + "validation-00000-of-00001.parquet"}
    SPLIT_PATTERNS = {"validation": "data/validation-*.parquet", "test": "data/test-*.parquet"}
    DESCRIPTION = (
        "Env-DocRED: every DocRED validation document renamed once per seed with entities of the same fine-grained "
        "type; labels, types, evidence and coreference unchanged. Measures robustness of document-level relation "
        "extraction to entity name variations."
    )
    HOMEPAGE = "https://huggingface.co/datasets/envre/env_docred"
    CITATION = ENV_CITATION + "\n\n" + DOCRED_CITATION
