"""Loading checkpoints without ever running their code. Every load of the project (models, configs, tokenizers,
pipelines, the local ICL backend) passes ``trust_remote_code=False``, so transformers never asks "run the custom
code? [y/N]" and nothing typed at a prompt runs a folder's module; a checkpoint that loads only with its own code
is refused with :class:`CheckpointCodeRefused`, which names it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: The files in which a checkpoint names code of its own (``auto_map``) for transformers' auto classes.
_CODE_FILES = ("config.json", "tokenizer_config.json")


class CheckpointCodeRefused(ValueError):
    """A checkpoint (folder or Hub id) that transformers would load only by running its own code."""

    def __init__(self, location: str, files: list[str]):
        self.location, self.files = location, files
        super().__init__(
            f"{location}: loads only by running code of its own (auto_map in {' and '.join(files)}), and envre-hf "
            "never runs a checkpoint's code: use a model of a type transformers or envre-hf knows"
        )


def code_files(location: str | os.PathLike) -> list[str]:
    """The files of a checkpoint (a folder, or a Hub id as far as the Hub cache holds it) that name code of their
    own (``auto_map``) for something transformers has no class of: a model type, a tokenizer class."""
    found = []
    for name in _CODE_FILES:
        path = _checkpoint_file(location, name)
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path is not None else {}
        except (OSError, ValueError):  # unreadable: the load itself says what is wrong with it
            data = {}
        found += [name] if isinstance(data, dict) and "auto_map" in data and not _known(name, data) else []
    return found


def _checkpoint_file(location: str | os.PathLike, name: str) -> Path | None:
    """``name`` of a checkpoint folder, or of a Hub id's copy in the Hub cache (None: not there)."""
    if Path(location).exists():
        return Path(location) / name if (Path(location) / name).is_file() else None
    from huggingface_hub import try_to_load_from_cache  # lazy: only a Hub id needs the Hub cache

    try:
        cached = try_to_load_from_cache(os.fspath(location), name)
    except ValueError:  # not a Hub id either: the load says what it is
        return None
    return Path(cached) if isinstance(cached, str) else None


def _known(name: str, data: dict) -> bool:
    """Whether transformers (with envre-hf's registrations) has a class for what ``data`` describes."""
    from transformers import CONFIG_MAPPING  # lazy: as every caller, only where a load failed
    from transformers.models.auto.tokenization_auto import tokenizer_class_from_name

    if name == "config.json":
        return data.get("model_type") in CONFIG_MAPPING
    known = data.get("tokenizer_class")
    return isinstance(known, str) and tokenizer_class_from_name(known) is not None


@contextmanager
def no_checkpoint_code(location: str | os.PathLike) -> Iterator[None]:
    """Around loads with ``trust_remote_code=False``: a checkpoint that names code of its own is refused with
    :class:`CheckpointCodeRefused`, a local one before transformers reads it, a Hub one when transformers refuses
    it (a ValueError, once its files are in the Hub cache); other errors pass unchanged."""
    files = code_files(location)
    if files:
        raise CheckpointCodeRefused(os.fspath(location), files)
    try:
        yield
    except CheckpointCodeRefused:
        raise
    except ValueError:
        files = code_files(location)
        if files:
            raise CheckpointCodeRefused(os.fspath(location), files) from None
        raise
