"""A stand-in renamer and a one-call build, shared by the build, reliability and dataset-script tests."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from envre_hf.documents import Document, Substitution, validate_document
from envre_hf.renaming.builder import BuildConfig, build_split

SEEDS = (0, 1)


class FakePipeline:
    """A stand-in renamer: every PER/ORG/LOC mention gets same-length made-up tokens derived from
    (document, entity, seed). Validates like the real pipeline; can crash or slow down on purpose."""

    def __init__(self, crash_after: int | None = None, delay: float = 0.0):
        self.crash_after = crash_after
        self.delay = delay
        self.calls = 0

    def rename(self, doc: Document, seed: int) -> Document:
        self.calls += 1
        if self.crash_after is not None and self.calls > self.crash_after:
            raise RuntimeError("simulated crash")
        time.sleep(self.delay)
        validate_document(doc)
        new = Document(**{**doc.__dict__})
        new.sents = [list(s) for s in doc.sents]
        new.entities = []
        subs = []
        for e, entity in enumerate(doc.entities):
            ent = type(entity)(mentions=[type(m)(**m.__dict__) for m in entity.mentions], extra=dict(entity.extra))
            if entity.type in ("PER", "ORG", "LOC"):
                tag = hashlib.md5(f"{doc.key}|{e}|{seed}".encode()).hexdigest()[:6]
                for m in ent.mentions:
                    tokens = [f"Zq{tag}{k}" for k in range(m.end - m.start)]
                    new.sents[m.sent_id][m.start : m.end] = tokens
                    m.name = " ".join(tokens)
                subs.append(Substitution(e, None, None, entity.mentions[0].name, ent.mentions[0].name, "exact"))
            else:
                subs.append(Substitution(e, None, None, entity.mentions[0].name, entity.mentions[0].name, "unchanged:untyped"))
            new.entities.append(ent)
        new.doc_id, new.orig_title, new.seed, new.substitutions = f"{doc.key}#{seed}", doc.title, seed, subs
        return new


def build_with(pipeline, input_path: Path, out: Path, **kw):
    """``build_split`` of ``input_path`` into ``out`` with ``pipeline`` (seeds 0 and 1, no progress bar)."""
    config = BuildConfig(output_dir=out, seeds=kw.pop("seeds", SEEDS), progress=False, **kw)
    return build_split(pipeline, input_path, config, kb_name="fake", kb_snapshot="fake-1")
