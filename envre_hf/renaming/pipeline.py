"""The four-step renaming pipeline: link, type, retrieve a look-alike, substitute alias-wise.

For every entity of a document (in entity order):

1. **link** it to a knowledge-base item (``kb.link``);
2. take the item's fine-grained **types**, most specific first (``kb.types``);
3. **retrieve** items of that type with at least as many names as the entity has distinct
   mention names (``kb.candidates(type, min_names, exclude={own item})``; the next type is
   tried when none fits) and draw one with ``random.Random(f"{seed}|{doc.key}|{entity}")``,
   so a choice depends only on the seed, the document and the entity, never on processing
   order or on other documents;
4. **substitute** alias-wise: the entity's distinct original names, most frequent first
   (first appearance breaks ties), get the candidate's usable names in KB order (label
   first, then aliases). Identical original names get the same new name. A new name's leading
   "The" is dropped when the text already has "the" right before a mention of that original
   name (no "the The Beatles"), unless the shorter name would collide with another name.

A candidate name is *usable* when it is not in ``config.exclude_names`` (name isolation) and
does not collide with any original name in the document, with a name already given to
another entity, or with another new name of the same entity; names are compared by
:func:`~envre_hf.documents.tokenize.name_key` (DocRED tokens, case-folded). NUM and TIME
entities (``config.value_types``) get rule-based new values instead (``values``).

**Overlap rule.** A mention is replaced only when no other mention overlaps its span, except
mentions of the same entity with the identical span and name. An entity with any other
overlapping or nested mention (37 pairs of different entities in the Re-DocRED test split) is
left unchanged, and so is the entity it overlaps; their mentions still move with the rest
of the sentence, so no span is ever corrupted.

**Output.** The renamed copy keeps sentences count, labels, evidence, entity order and
mention order; ``doc_id`` is ``f"{doc.key}#{seed}"``, ``orig_title`` the original title and
``seed`` the seed. A renamed mention's tokens are the new name's DocRED tokens
(:func:`~envre_hf.documents.tokenize.tokenize_name`) and its ``name`` is those tokens joined
by single spaces, so ``" ".join(tokens) == name`` for every renamed mention (the original
``name``/token mismatches such as ``"63.93%"`` are thereby normalised). Later positions in
changed sentences shift; Re-DocRED's ``global_pos`` is recomputed, its ``index`` stays valid.
A renamed entity's ``wikidata_id`` becomes the new item's id when that is a Wikidata Q-id
and ``None`` otherwise, and its stale ``entity_linking`` is dropped. The title is replaced
when it equals an original name of a renamed entity.

``substitutions`` lists, per renamed entity, one :class:`Substitution` per distinct original
name (``match`` = the KB's ``"exact"`` / ``"relaxed:<how>"``, or ``"rule"`` for values), and
one record per unchanged entity (its most frequent name) with ``new_name == original_name``,
``match`` = ``"unchanged:<reason>"`` (``unlinked``, ``untyped``, ``no-candidate``, ``overlap``,
``no-rule``) and, when step 1/2 got that far, the entity's own item and type; see
:func:`is_substituted`.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..documents import Document, Substitution, validate_document
from ..kb.base import Candidate, KnowledgeBase, KnowledgeBaseError
from .leaks import find_leaks, leak_replacements
from .substitution import SpanReplacement, substitute
from ..documents.tokenize import joined_name, name_key, tokenize_name
from .values import rename_values

UNCHANGED = "unchanged:"
_QID = re.compile(r"^Q[1-9][0-9]*$")


def is_substituted(sub: Substitution) -> bool:
    """True for a record of a renamed entity, False for an ``unchanged:<reason>`` record."""
    return not sub.match.startswith(UNCHANGED)


@dataclass(frozen=True)
class RenamingConfig:
    """Options of :class:`RenamingPipeline` (the defaults are what ``envre build`` uses)."""

    #: Names that may never be used as new names (name isolation; compared by ``name_key``).
    exclude_names: frozenset[str] = frozenset()
    #: Replace unannotated occurrences of an original name in the renamed text by its new name.
    fix_leaks: bool = False
    #: Coarse types renamed by the NUM/TIME value rules instead of the KB; ``()`` sends all to the KB.
    value_types: tuple[str, ...] = ("NUM", "TIME")
    #: Whether ``exclude_names`` also vetoes rule-made values (years, numbers); off since any
    #: year or number appears in a large training split.
    exclude_values: bool = False
    #: How many of ``kb.types(item)`` (most specific first) step 3 tries before giving up.
    max_types: int = 3
    #: Random draws from a candidate list before falling back to a scan from a random offset.
    max_draws: int = 16
    #: Most candidates the fallback scan looks at.
    max_scan: int = 2000
    #: Replace the title when it equals an original name of a renamed entity.
    rename_title: bool = True
    #: Validate the input document first (raises DocumentError on malformed input).
    validate: bool = True

    def fingerprint(self) -> str:
        """A stable hash of every option (the name set sorted), for caches and build manifests."""
        digest = hashlib.sha256()
        for key, value in sorted(self.__dict__.items()):
            if isinstance(value, (set, frozenset)):
                value = sorted(value)
            digest.update(json.dumps([key, value], ensure_ascii=False).encode())
        return digest.hexdigest()[:16]


@dataclass
class RenameReport:
    """What happened to one document: per-entity outcome and the leak check."""

    outcomes: dict[int, str] = field(default_factory=dict)
    leaks_found: int = 0
    leaks_fixed: int = 0


@dataclass
class _Choice:
    item_id: str | None
    fine_type: str | None
    match: str
    new_tokens: dict[str, list[str]]  # original name -> new tokens


def entity_rng(seed: int, doc_key: str, entity: int) -> random.Random:
    """The generator of one entity's draw: depends on nothing but (seed, document key, entity index)."""
    return random.Random(f"{seed}|{doc_key}|{entity}")


def _overlapping_entities(doc: Document) -> set[int]:
    """Entities with a mention overlapped by a different span (see the module's overlap rule)."""
    by_sent: dict[int, list[tuple[int, int, int, str]]] = {}
    for e, entity in enumerate(doc.entities):
        for mention in entity.mentions:
            by_sent.setdefault(mention.sent_id, []).append((mention.start, mention.end, e, mention.name))
    blocked: set[int] = set()
    for spans in by_sent.values():
        if len(spans) < 2:
            continue
        spans.sort()
        for i, (s1, t1, e1, n1) in enumerate(spans):
            for s2, t2, e2, n2 in spans[i + 1 :]:
                if s2 >= t1:
                    break
                if (s1, t1, e1, n1) != (s2, t2, e2, n2):
                    blocked.add(e1)
                    blocked.add(e2)
    return blocked


def _bare(key: str) -> str:
    """A name key without its leading article ("the gambia" -> "gambia")."""
    return key[4:] if key.startswith("the ") else key


def _fit_articles(doc: Document, e: int, tokens: dict[str, list[str]], taken: set[str]) -> dict[str, list[str]]:
    """Drop a new name's leading "The" where the text already has "the" right before the mention.

    Without this, "in the United States" renamed to "The Swingles" reads "in the The Swingles".
    The article is dropped for every mention of that original name (one original name -> one new
    name), and only when the shorter name stays distinct from the entity's other new names and
    from every name already in use.
    """
    preceded = set()
    for mention in doc.entities[e].mentions:
        if mention.start > 0 and doc.sents[mention.sent_id][mention.start - 1].casefold() == "the":
            preceded.add(mention.name)
    if not preceded:
        return tokens
    out = dict(tokens)
    keys = {name_key(" ".join(t)) for t in tokens.values()}
    for name in preceded:
        new = out[name]
        if len(new) > 1 and new[0].casefold() == "the":
            key = name_key(" ".join(new[1:]))
            if key not in keys and key not in taken:
                out[name] = new[1:]
                keys.add(key)
    return out


class RenamingPipeline:
    """Renames the entities of documents with names drawn from a :class:`KnowledgeBase`.

    Deterministic: the same documents, seed, config and KB snapshot give byte-identical output.
    """

    def __init__(self, kb: KnowledgeBase, config: RenamingConfig | None = None):
        self.kb = kb
        self.config = config if config is not None else RenamingConfig()
        # article-insensitive: a benchmark that used "Gambia" (its "The" dropped) also excludes "The Gambia"
        keys = [name_key(n) for n in self.config.exclude_names]
        self._excluded = frozenset(keys) | frozenset(_bare(k) for k in keys)

    # ------------------------------------------------------------------ public API

    def rename(self, doc: Document, seed: int) -> Document:
        """The renamed copy of ``doc`` for ``seed`` (see the module docstring for every guarantee)."""
        return self.rename_with_report(doc, seed)[0]

    def rename_with_report(self, doc: Document, seed: int) -> tuple[Document, RenameReport]:
        """:meth:`rename` plus what happened to each entity and the leak counts."""
        if self.config.validate:
            validate_document(doc)
        report = RenameReport()
        blocked = _overlapping_entities(doc)
        taken: set[str] = set()
        for entity in doc.entities:
            for mention in entity.mentions:
                taken.add(mention.name.casefold())
                taken.add(name_key(mention.name))
        choices: dict[int, _Choice] = {}
        subs: list[Substitution] = []
        originals: dict[int, dict[str, list[str]]] = {}
        for e in range(len(doc.entities)):
            names = self._ordered_names(doc, e)
            if e in blocked:
                choice = _Choice(None, None, UNCHANGED + "overlap", {})
            else:
                try:
                    choice = self._choose(doc, e, seed, names, taken)
                except KnowledgeBaseError as err:  # name the document and entity the KB failed on
                    raise KnowledgeBaseError(f"document {doc.key!r} entity {e}: {err}") from err
            report.outcomes[e] = choice.match
            if choice.match.startswith(UNCHANGED):
                subs.append(
                    Substitution(e, choice.item_id, choice.fine_type, names[0][0], names[0][0], choice.match)
                )
                continue
            choices[e] = choice
            originals[e] = dict(names)
            for name, _ in names:
                new_name = " ".join(choice.new_tokens[name])
                taken.add(new_name.casefold())
                subs.append(Substitution(e, choice.item_id, choice.fine_type, name, new_name, choice.match))
        replacements, new_names = [], {}
        for e, choice in choices.items():
            for m, mention in enumerate(doc.entities[e].mentions):
                tokens = choice.new_tokens[mention.name]
                replacements.append(SpanReplacement(mention.sent_id, mention.start, mention.end, tuple(tokens)))
                new_names[(e, m)] = " ".join(tokens)
        title = doc.title
        if self.config.rename_title:
            title_key = name_key(doc.title)
            for choice in choices.values():
                for name, tokens in choice.new_tokens.items():
                    if doc.title == name or title_key == name_key(name):
                        title = " ".join(tokens)
        renamed = substitute(
            doc,
            replacements,
            new_names,
            title=title,
            doc_id=f"{doc.key}#{seed}",
            orig_title=doc.title,
            seed=seed,
            substitutions=subs,
        )
        for e, choice in choices.items():
            entity = renamed.entities[e]
            entity.wikidata_id = choice.item_id if choice.item_id and _QID.match(choice.item_id) else None
            entity.extra.pop("entity_linking", None)
        leaks = find_leaks(renamed, originals)
        report.leaks_found = len(leaks)
        if leaks and self.config.fix_leaks:
            new_tokens = {e: choice.new_tokens for e, choice in choices.items()}
            renamed = substitute(renamed, leak_replacements(leaks, new_tokens))
            report.leaks_fixed = len(leaks)
        return renamed, report

    # ------------------------------------------------------------------ steps

    @staticmethod
    def _ordered_names(doc: Document, e: int) -> list[tuple[str, list[str]]]:
        """Distinct names of entity ``e``, most frequent first, each with its first mention's tokens."""
        counts: dict[str, int] = {}
        first: dict[str, list[str]] = {}
        for mention in doc.entities[e].mentions:
            counts[mention.name] = counts.get(mention.name, 0) + 1
            if mention.name not in first:
                first[mention.name] = mention.tokens(doc.sents)
        order = sorted(first, key=lambda n: -counts[n])  # stable: first appearance breaks ties
        return [(name, first[name]) for name in order]

    def _choose(
        self, doc: Document, e: int, seed: int, names: list[tuple[str, list[str]]], taken: set[str]
    ) -> _Choice:
        entity = doc.entities[e]
        rng = entity_rng(seed, doc.key, e)
        coarse = entity.type
        if coarse in self.config.value_types:
            check_excluded = self.config.exclude_values and bool(self._excluded)

            def accept(joined: str) -> bool:
                key = joined.casefold()
                return key not in taken and not (check_excluded and key in self._excluded)

            values = rename_values(coarse, names, rng, accept)
            if values is None:
                return _Choice(None, None, UNCHANGED + "no-rule", {})
            return _Choice(None, values.fine_type, "rule", values.tokens)
        item = self.kb.link(doc, e)
        if item is None:
            return _Choice(None, None, UNCHANGED + "unlinked", {})
        types = self.kb.types(item)
        if not types:
            return _Choice(item, None, UNCHANGED + "untyped", {})
        for fine_type in types[: self.config.max_types]:
            candidates = self.kb.candidates(fine_type, len(names), frozenset({item}))
            picked = self._pick(candidates, item, len(names), rng, taken)
            if picked is not None:
                candidate, new_names = picked
                tokens = {name: tokenize_name(new) for (name, _), new in zip(names, new_names)}
                return _Choice(candidate.item_id, fine_type, candidate.match, _fit_articles(doc, e, tokens, taken))
        return _Choice(item, types[0], UNCHANGED + "no-candidate", {})

    def _usable_names(self, item_id: str, k: int, taken: set[str]) -> list[str] | None:
        """The first ``k`` usable names of ``item_id`` (see the module docstring), or ``None``."""
        out: list[str] = []
        keys: set[str] = set()
        for name in self.kb.names(item_id):
            key = name_key(name)
            if not key or key in taken or key in keys or key in self._excluded or _bare(key) in self._excluded:
                continue
            keys.add(key)
            out.append(joined_name(name))
            if len(out) == k:
                return out
        return None

    def _pick(
        self, candidates: Sequence[Candidate], own: str, k: int, rng: random.Random, taken: set[str]
    ) -> tuple[Candidate, list[str]] | None:
        n = len(candidates)
        if n == 0:
            return None

        def try_one(candidate: Candidate) -> tuple[Candidate, list[str]] | None:
            if candidate.item_id == own:
                return None
            usable = self._usable_names(candidate.item_id, k, taken)
            return None if usable is None else (candidate, usable)

        for _ in range(min(self.config.max_draws, n)):
            found = try_one(candidates[rng.randrange(n)])
            if found is not None:
                return found
        offset = rng.randrange(n)
        for j in range(min(n, self.config.max_scan)):
            found = try_one(candidates[(offset + j) % n])
            if found is not None:
                return found
        return None



class _RenameBatch:
    """``datasets.map`` function: rows -> renamed rows for one seed (picklable for ``num_proc``)."""

    def __init__(self, pipeline: RenamingPipeline, seed: int):
        self.pipeline = pipeline
        self.seed = seed

    def __call__(self, batch: dict[str, list]) -> dict[str, list]:
        from ..documents.hf import DOCUMENT_FEATURES, document_from_row, document_to_row

        rows = []
        for i in range(len(batch["title"])):
            doc = document_from_row({key: values[i] for key, values in batch.items()})
            rows.append(document_to_row(self.pipeline.rename(doc, self.seed)))
        return {key: [row[key] for row in rows] for key in DOCUMENT_FEATURES}


def rename_dataset(dataset, pipeline: RenamingPipeline, seeds: Sequence[int], num_proc: int = 1, batch_size: int = 64):
    """Renamed copies of every row of a document ``datasets.Dataset``, one copy per seed.

    Rows come seed-major (all documents for ``seeds[0]``, then ``seeds[1]``, ...), in the
    input order, whatever ``num_proc`` is: each copy depends only on its document and seed.
    The dataset must have the columns of :data:`~envre_hf.documents.DOCUMENT_FEATURES`.
    """
    from datasets import concatenate_datasets

    from ..documents.hf import DOCUMENT_FEATURES

    missing = set(DOCUMENT_FEATURES) - set(dataset.column_names)
    if missing:
        raise ValueError(f"the dataset lacks document columns {sorted(missing)}; build it with documents_to_dataset")
    if not seeds:
        raise ValueError("rename_dataset needs at least one seed")
    parts = []
    for seed in seeds:
        # explicit fingerprint: hashing the pipeline (its whole KB) would be slow and pointless
        fingerprint = hashlib.sha256(
            f"{dataset._fingerprint}|{seed}|{pipeline.kb.snapshot_id()}|{pipeline.config.fingerprint()}".encode()
        ).hexdigest()[:32]
        parts.append(
            dataset.map(
                _RenameBatch(pipeline, seed),
                batched=True,
                batch_size=batch_size,
                num_proc=num_proc if num_proc > 1 else None,
                features=DOCUMENT_FEATURES,
                remove_columns=[c for c in dataset.column_names if c not in DOCUMENT_FEATURES],
                new_fingerprint=fingerprint,
                desc=f"renaming (seed {seed})",
            )
        )
    return parts[0] if len(parts) == 1 else concatenate_datasets(parts)
