"""ICL prompts: one user message of instruction, relation names, output format, CG, ``k`` demonstrations (with
their renamed copies under DA) and the test document, every mention marked ``[N tokens]`` (docs/icl.md).

Documents are expected validated (as every reader does): the prompt restates none of the reader's checks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..documents import Document, RelationSchema, docred_schema

#: A renamer, e.g. ``RenamingPipeline(kb).rename``: (document, seed) -> renamed copy.
Renamer = Callable[[Document, int], Document]

INSTRUCTION = (
    "Task: document-level relation extraction. Read the document and list every relation that holds "
    "between two of its entities. The entities are numbered in order of first appearance, and every "
    "mention of an entity is marked in the text as [N mention], where N is the entity number."
)
OUTPUT_FORMAT = (
    "Output format: one triple a line, <subject entity number; relation type; object entity number>, "
    "for example <1; country; 2>. Use only the relation types listed above and only the entity numbers "
    "of the document. Write nothing else; if no relation holds, write None."
)
CONSISTENCY_GUIDANCE = (
    "Each example document is followed by a renamed copy. The two documents differ only in the names "
    "of the entities, so their outputs are identical. Relations must be inferred from the context of "
    "the document, not from what you know about the entities themselves."
)


@dataclass(frozen=True)
class PromptConfig:
    """How prompts are built: ``k`` demonstrations (the study uses 1 or 3), ``da`` their renamed copies (needs a
    renamer), ``cg`` the consistency guidance; ``seed`` draws demonstrations per test document and seeds the
    renaming, so reruns and resumed runs see the same prompt."""

    k: int = 1
    da: bool = False
    cg: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.k < 0:
            raise ValueError(f"k must be >= 0, got {self.k}")


@dataclass
class Prompt:
    """A built prompt and what the parser needs to map entity numbers back to ``vertexSet`` indices."""

    messages: list[dict[str, str]]
    #: ``numbering[N - 1]`` is the ``vertexSet`` index of entity number N in the test document.
    numbering: list[int]
    demonstrations: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(m["content"] for m in self.messages)


def entity_numbering(doc: Document) -> list[int]:
    """``vertexSet`` indices ordered by first mention (sentence, start token, then index: the sort is stable)."""
    return sorted(range(len(doc.entities)), key=lambda e: min((m.sent_id, m.start) for m in doc.entities[e].mentions))


def mark_mentions(doc: Document, numbering: Sequence[int] | None = None) -> str:
    """The document text with every mention written as ``[N tokens]`` (N = entity number)."""
    numbering = entity_numbering(doc) if numbering is None else numbering
    number_of = {e: n + 1 for n, e in enumerate(numbering)}
    opens: dict[tuple[int, int], list[tuple[int, int]]] = {}
    closes: dict[tuple[int, int], int] = {}
    for e, entity in enumerate(doc.entities):
        for m in entity.mentions:
            # Longer spans open first so that nested mentions nest.
            opens.setdefault((m.sent_id, m.start), []).append((-m.end, number_of[e]))
            closes[(m.sent_id, m.end - 1)] = closes.get((m.sent_id, m.end - 1), 0) + 1
    sentences = []
    for s, sent in enumerate(doc.sents):
        out = []
        for i, tok in enumerate(sent):
            prefix = "".join(f"[{n} " for _, n in sorted(opens.get((s, i), [])))
            out.append(prefix + tok + "]" * closes.get((s, i), 0))
        sentences.append(" ".join(out))
    return " ".join(sentences)


def entity_list(doc: Document, numbering: Sequence[int]) -> str:
    """One line per entity: ``N: first mention name (TYPE)``."""
    lines = []
    for n, e in enumerate(numbering, start=1):
        entity = doc.entities[e]
        first = min(entity.mentions, key=lambda m: (m.sent_id, m.start))
        lines.append(f"{n}: {first.name} ({entity.type})")
    return "\n".join(lines)


def format_triples(doc: Document, numbering: Sequence[int], schema: RelationSchema | None = None) -> str:
    """Gold triples of ``doc`` in the output format, sorted by subject, object and relation."""
    schema = schema or docred_schema()
    number_of = {e: n + 1 for n, e in enumerate(numbering)}
    triples = sorted((number_of[r.h], number_of[r.t], r.r) for r in doc.relations)
    if not triples:
        return "None"
    return "\n".join(f"<{h}; {schema.id2name[r]}; {t}>" for h, t, r in triples)


def _block(header: str, doc: Document, schema: RelationSchema, with_triples: bool, numbering: Sequence[int]) -> str:
    parts = [header, "Document:", mark_mentions(doc, numbering), "Entities:", entity_list(doc, numbering), "Triples:"]
    if with_triples:
        parts.append(format_triples(doc, numbering, schema))
    return "\n".join(parts)


def draw_demonstrations(
    train: Sequence[Document], k: int, seed: int, exclude_key: str | None = None, exclude_titles: Sequence[str] = ()
) -> list[Document]:
    """``k`` labelled training documents, drawn with ``random.Random(f"{seed}:{exclude_key}")`` (each test
    document its own reproducible draw), never the one keyed or titled ``exclude_key`` or in ``exclude_titles``."""
    banned = {exclude_key, *exclude_titles}
    pool = [d for d in train if d.has_labels and d.key not in banned and d.title not in banned]
    if k > len(pool):
        raise ValueError(f"k={k} demonstrations requested but the training set has {len(pool)} labelled documents")
    return random.Random(f"{seed}:{exclude_key}").sample(pool, k)


class PromptBuilder:
    """Builds the prompt of each test document from a training set, a :class:`PromptConfig` and a renamer."""

    def __init__(
        self,
        train: Sequence[Document],
        config: PromptConfig | None = None,
        renamer: Renamer | None = None,
        schema: RelationSchema | None = None,
    ):
        self.train = list(train)
        self.config = config or PromptConfig()
        self.schema = schema or docred_schema()
        if self.config.da and renamer is None:
            raise ValueError("demonstration augmentation (da=True) needs a renamer, e.g. RenamingPipeline(kb).rename")
        self.renamer = renamer

    def header(self) -> str:
        relations = "\n".join(rel.name for rel in self.schema.relations)
        parts = [INSTRUCTION, f"Relation types:\n{relations}", OUTPUT_FORMAT]
        if self.config.cg:
            parts.append(CONSISTENCY_GUIDANCE)
        return "\n\n".join(parts)

    def build(self, test_doc: Document, draw_for: Document | None = None) -> Prompt:
        """The prompt for ``test_doc``, with the demonstrations drawn for ``draw_for`` (default ``test_doc``): a
        renamed copy given its original gets the original's prompt but for the names (``envre probe``)."""
        cfg = self.config
        drawn = test_doc if draw_for is None else draw_for
        titles = [t for t in (drawn.title, drawn.orig_title) if t]
        demos = draw_demonstrations(self.train, cfg.k, cfg.seed, drawn.key, titles)
        blocks = [self.header()]
        for i, demo in enumerate(demos, start=1):
            numbering = entity_numbering(demo)
            blocks.append(_block(f"Example {i}", demo, self.schema, True, numbering))
            if cfg.da:
                # The twin keeps the original's numbers, so its triples are literally the same lines.
                renamed = self.renamer(demo, cfg.seed)
                blocks.append(_block(f"Example {i} (renamed copy)", renamed, self.schema, True, numbering))
        numbering = entity_numbering(test_doc)
        blocks.append(_block("Test document", test_doc, self.schema, False, numbering))
        return Prompt(messages=[{"role": "user", "content": "\n\n".join(blocks)}], numbering=numbering,
                      demonstrations=[demo.key for demo in demos])
