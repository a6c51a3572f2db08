"""DocRED (Yao et al., ACL 2019), the document-level relation extraction benchmark built on Wikipedia/Wikidata.

DocRED's files are distributed from a Google Drive folder, which cannot be fetched by a plain download: get
them once and pass their folder as ``data_dir`` (or single files as ``data_files``). The test split has no
labels (``has_labels`` is false). See ``dataset_scripts/README.md``.
"""

from __future__ import annotations

from dataset_scripts.common import DocREBuilder
from envre_hf.citations import DOCRED_CITATION


class DocRED(DocREBuilder):
    """DocRED train_annotated / train_distant / validation (``dev.json``) / test, in the envre-hf schema."""

    URLS: dict[str, str] = {}
    SPLIT_PATTERNS = {
        "train_annotated": "train_annotated.json",
        "train_distant": "train_distant.json",
        "validation": "dev.json",
        "test": "test.json",
    }
    MANUAL_DOWNLOAD = (
        "download train_annotated.json, dev.json and test.json (train_distant.json optionally) from the Google "
        "Drive folder linked in https://github.com/thunlp/DocRED into one folder, then pass it as data_dir"
    )
    DESCRIPTION = (
        "DocRED: 5,053 Wikipedia documents annotated with entities (mention clusters), 96 Wikidata relation types "
        "and evidence sentences, plus a large distantly supervised training set."
    )
    HOMEPAGE = "https://github.com/thunlp/DocRED"
    CITATION = DOCRED_CITATION
