"""Re-DocRED (Tan et al., EMNLP 2022): DocRED with its false-negative labels revised.

Downloads ``{train,dev,test}_revised.json`` from the Re-DocRED GitHub repository unless ``data_dir`` (a folder
with those file names), ``data_files`` or ``urls`` point elsewhere. See ``dataset_scripts/README.md``.
"""

from __future__ import annotations

from dataset_scripts.common import DocREBuilder
from envre_hf.citations import REDOCRED_CITATION

_BASE_URL = "https://raw.githubusercontent.com/tonytan48/Re-DocRED/main/data/"


class ReDocRED(DocREBuilder):
    """Re-DocRED train / validation (``dev_revised.json``) / test, in the envre-hf document schema."""

    URLS = {
        "train": _BASE_URL + "train_revised.json",
        "validation": _BASE_URL + "dev_revised.json",
        "test": _BASE_URL + "test_revised.json",
    }
    SPLIT_PATTERNS = {"train": "train_revised.json", "validation": "dev_revised.json", "test": "test_revised.json"}
    DESCRIPTION = (
        "Re-DocRED: the DocRED documents with relation labels revised to add the many missing (false negative) "
        "facts. Document-level relation extraction: sentences, entities as mention clusters, labels between entities."
    )
    HOMEPAGE = "https://github.com/tonytan48/Re-DocRED"
    CITATION = REDOCRED_CITATION
