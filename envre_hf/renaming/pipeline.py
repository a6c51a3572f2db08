"""The four-step renaming pipeline: link, type, retrieve a look-alike, substitute alias-wise.

A choice depends only on (seed, document key, entity), so the same inputs give byte-identical copies; every
rule and guarantee is in docs/renaming.md and docs/coherence.md.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..documents import DOCUMENT_FEATURES, Document, DocumentError, Substitution, validate_document
from ..documents import dataset_to_documents, documents_to_dataset
from ..kb.base import Candidate, KnowledgeBase, KnowledgeBaseError
from ..kb.wikidata_json import is_item_id
from .driver import RenamingDriver
from .forms import ACRONYM, PLAIN, NO_NOUN, NameForm, counted_noun, form_of, form_of_tokens, indefinite_article
from .forms import INDEFINITE, is_count_of_one, is_one, pluralize, with_case
from .leaks import find_leaks, leak_replacements
from .substitution import SpanReplacement, substitute as substitute_spans
from ..documents.tokenize import name_key, tokenize_name
from .values import document_year_shift, rename_values

#: What each coherence rule version does (``time`` 1 and ``num`` 1 were the per-entity random draws).
RULES: dict[str, str] = {
    "time-2": "one year offset per document for every year, decade and date; months and days of dated names kept",
    "num-3": "a count of one pluralises the noun it counts (adjectives skipped; stays one when that noun cannot be "
    "told), nothing becomes one, percentages within 0-100",
    "forms-1": "demonym/acronym/plain form matched (else no-form-match); leading article and plural preferred; "
    "possessive ending kept",
    "articles-1": "a/an right before a substituted mention agrees with the new name's first sound",
}
#: Recorded in the config (so in the statistics and the card): two benchmark versions can be compared.
RULE_VERSIONS = " ".join(RULES)

UNCHANGED = "unchanged:"


def is_substituted(sub: Substitution) -> bool:
    """True for a record of a renamed entity, False for an ``unchanged:<reason>`` record."""
    return not sub.match.startswith(UNCHANGED)


def original_key(copy: Document) -> str:
    """The key of the original a renamed ``copy`` was made from: ``<key>`` of its ``doc_id`` ``"<key>#<seed>"`` (as
    :meth:`RenamingPipeline.rename` writes it), else its ``orig_title``."""
    if copy.doc_id is not None and "#" in copy.doc_id:
        return copy.doc_id.rsplit("#", 1)[0]
    if copy.orig_title is not None:
        return copy.orig_title
    raise DocumentError(
        "a renamed copy needs doc_id '<original key>#<seed>' or orig_title to find its original",
        title=copy.title,
        field="doc_id",
    )


@dataclass(frozen=True)
class RenamingConfig:
    """Options of :class:`RenamingPipeline` (the defaults are what ``envre build`` uses)."""

    #: Names that may never be used as new names (name isolation; compared by ``name_key``).
    exclude_names: frozenset[str] = frozenset()
    #: Replace unannotated occurrences of an original name in the renamed text by its new name.
    fix_leaks: bool = False
    #: Coarse types renamed by the NUM/TIME value rules instead of the KB; ``()`` sends all to the KB.
    value_types: tuple[str, ...] = ("NUM", "TIME")
    #: Whether ``exclude_names`` also vetoes rule-made values; off since any year appears in a large split.
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
    #: Versions of the text-coherence rules (see :data:`RULES`); informational, part of the fingerprint.
    rule_versions: str = RULE_VERSIONS

    def fingerprint(self) -> str:
        """A stable hash of every option (the name set sorted): decides whether a build may replace a split."""
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
    #: "a"/"an" tokens changed to agree with the new name after them.
    articles_fixed: int = 0
    #: Nouns after a count of one that became plural ("one year" -> "three years").
    nouns_pluralized: int = 0
    #: The document's year offset (TIME rule), ``None`` without TIME names.
    year_shift: int | None = None


@dataclass
class _Choice:
    item_id: str | None
    fine_type: str | None
    match: str
    new_tokens: dict[str, list[str]]  # original name -> new tokens
    #: (mention index, offset after its end) of each noun outside every mention that becomes plural
    pluralize_after: tuple[tuple[int, int], ...] = ()


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
        spans.sort()
        for i, (s1, t1, e1, n1) in enumerate(spans):
            for s2, t2, e2, n2 in spans[i + 1 :]:
                if s2 >= t1:
                    break
                if (s1, t1, e1, n1) != (s2, t2, e2, n2):
                    blocked.update((e1, e2))
    return blocked


def _bare(key: str) -> str:
    """A name key without its leading article ("the gambia" -> "gambia")."""
    return key[4:] if key.startswith("the ") else key


def _fit_articles(doc: Document, e: int, tokens: dict[str, list[str]], taken: set[str]) -> dict[str, list[str]]:
    """Drop a new name's leading "The" where the text has "the" before a mention ("in the The Swingles"),
    for every mention of that original name, when the shorter name stays distinct from every name in use."""
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


@dataclass
class _DocumentRenaming:
    """One document's renaming in progress: what the four steps share."""

    doc: Document
    seed: int
    report: RenameReport
    #: Distinct names of each entity, most frequent first, with their first mention's tokens.
    names: dict[int, list[tuple[str, list[str]]]]
    #: Entities left unchanged by the overlap rule.
    blocked: set[int]
    #: Keys of every name in use: the document's mention names, then each new name given.
    taken: set[str]
    #: Keys of the new names given so far.
    given: set[str] = field(default_factory=set)
    choices: dict[int, _Choice] = field(default_factory=dict)
    unchanged: dict[int, _Choice] = field(default_factory=dict)

    def record(self, e: int, choice: _Choice) -> None:
        """Keep entity ``e``'s choice; a renamed entity's new names are taken from now on."""
        if choice.match.startswith(UNCHANGED):
            self.unchanged[e] = choice
            return
        self.choices[e] = choice
        for name, _ in self.names[e]:
            key = name_key(" ".join(choice.new_tokens[name]))
            self.taken.add(key)
            self.given.add(key)


class RenamingPipeline:
    """Renames the entities of documents with names drawn from a :class:`KnowledgeBase`; the same documents,
    seed, config and KB snapshot give byte-identical output.

    The study's four steps are its methods: :meth:`link`, :meth:`type`, :meth:`candidates` (retrieve and draw a
    look-alike) and :meth:`substitute`; NUM/TIME entities take the value rules instead of the first three."""

    def __init__(self, kb: KnowledgeBase, config: RenamingConfig | None = None):
        self.kb = kb
        self.config = config if config is not None else RenamingConfig()
        # article-insensitive: a benchmark that used "Gambia" (its "The" dropped) also excludes "The Gambia"
        keys = [name_key(n) for n in self.config.exclude_names]
        self._excluded = frozenset(keys) | frozenset(_bare(k) for k in keys)
        self._names_cache: dict[str, tuple[tuple[str, str, NameForm], ...]] = {}  # item -> usable (name, key, form)

    def rename(self, doc: Document, seed: int) -> Document:
        """The renamed copy of ``doc`` for ``seed`` (see the module docstring for every guarantee)."""
        return self.rename_with_report(doc, seed)[0]

    def rename_with_report(self, doc: Document, seed: int) -> tuple[Document, RenameReport]:
        """:meth:`rename` plus what happened to each entity and the leak counts."""
        if self.config.validate:
            validate_document(doc)
        work = _start(doc, seed, self.config.value_types)
        for e in range(len(doc.entities)):
            work.record(e, self._choose(work, e))
        if work.report.year_shift is not None:
            _settle_value_collisions(doc, work.choices, work.unchanged)
        return self.substitute(work), work.report

    def _choose(self, work: _DocumentRenaming, e: int) -> _Choice:
        """Entity ``e``'s new names: steps 1-3, or the value rules for NUM/TIME; unchanged under the overlap rule."""
        doc = work.doc
        if e in work.blocked:
            return _Choice(None, None, UNCHANGED + "overlap", {})
        rng = entity_rng(work.seed, doc.key, e)
        try:
            if doc.entities[e].type in self.config.value_types:
                return self._choose_value(work, e, rng)
            item = self.link(doc, e)
            if item is None:
                return _Choice(None, None, UNCHANGED + "unlinked", {})
            types = self.type(item)
            if not types:
                return _Choice(item, None, UNCHANGED + "untyped", {})
            return self.candidates(work, e, item, types, rng)
        except KnowledgeBaseError as err:  # name the document and entity the KB failed on
            raise KnowledgeBaseError(f"document {doc.key!r} entity {e}: {err}") from err

    def link(self, doc: Document, e: int) -> str | None:
        """Step 1: the KB item of entity ``e`` (``None``: unlinked)."""
        return self.kb.link(doc, e)

    def type(self, item: str) -> list[str]:
        """Step 2: the item's fine-grained types, most specific first (step 3 tries up to ``max_types``)."""
        return self.kb.types(item)

    def candidates(
        self, work: _DocumentRenaming, e: int, item: str, types: Sequence[str], rng: random.Random
    ) -> _Choice:
        """Step 3: per type, the items with at least as many names as the entity (its own excluded); one drawn
        (:meth:`_pick`) whose unused names serve every original name's form, alias-wise."""
        names = work.names[e]
        forms = [form_of_tokens(tuple(tokens)) for _, tokens in names]
        offered = False
        for fine_type in types[: self.config.max_types]:
            candidates = self.kb.candidates(fine_type, len(names), frozenset({item}))
            offered = offered or bool(candidates)
            picked = self._pick(candidates, item, forms, rng, work.taken)
            if picked is not None:
                candidate, new_names = picked
                tokens = {name: new for (name, _), new in zip(names, new_names)}
                tokens = _fit_articles(work.doc, e, tokens, work.taken)
                return _Choice(candidate.item_id, fine_type, candidate.match, tokens)
        reason = "no-form-match" if offered and any(f.hard != PLAIN for f in forms) else "no-candidate"
        return _Choice(item, types[0], UNCHANGED + reason, {})

    def substitute(self, work: _DocumentRenaming) -> Document:
        """Step 4: every mention of a renamed entity gets its name's new tokens; then the substitution records,
        the title, the new Q-ids, "a"/"an" and counted nouns made to agree, and the leak check."""
        doc, choices, report = work.doc, work.choices, work.report
        subs, originals = _records(work)
        replacements, new_names = _replacements(doc, choices)
        title = _renamed_title(doc, choices) if self.config.rename_title else doc.title
        renamed = substitute_spans(doc, replacements, new_names, title=title, doc_id=f"{doc.key}#{work.seed}",
                                   orig_title=doc.title, seed=work.seed, substitutions=subs)
        for e, choice in choices.items():
            entity = renamed.entities[e]
            entity.wikidata_id = choice.item_id if is_item_id(choice.item_id) else None
            entity.extra.pop("entity_linking", None)
        report.articles_fixed, report.nouns_pluralized = _agree(doc, renamed, choices)
        leaks = find_leaks(renamed, originals)
        report.leaks_found = len(leaks)
        if leaks and self.config.fix_leaks:
            new_tokens = {e: choice.new_tokens for e, choice in choices.items()}
            renamed = substitute_spans(renamed, leak_replacements(leaks, new_tokens))
            report.leaks_fixed = len(leaks)
        return renamed

    def _choose_value(self, work: _DocumentRenaming, e: int, rng: random.Random) -> _Choice:
        """Rule-made values (``values``); TIME moves by the document's year offset (see the module docstring)."""
        doc, year_shift = work.doc, work.report.year_shift
        coarse = doc.entities[e].type
        percent, pluralize_after, agreement_blocked = _value_context(doc, e)
        if agreement_blocked:
            return _Choice(None, None, UNCHANGED + "no-number-agreement", {})
        check_excluded = self.config.exclude_values and bool(self._excluded)
        shift = year_shift if coarse == "TIME" else None
        # shifted years may take another entity's *original* year (it moves on too), never a new name
        blocked = work.given if shift is not None else work.taken

        def accept(joined: str) -> bool:
            key = name_key(joined)  # the key ``taken`` holds: "3 \xa0 km" and "3 km" are one name
            return key not in blocked and not (check_excluded and key in self._excluded)

        names = work.names[e]
        values = rename_values(coarse, names, rng, accept, year_shift=shift, percent=percent)
        if values is None:  # no rule at all, or only values that collide? (the reason, not the output)
            free = rename_values(coarse, names, random.Random(0), None, attempts=1, year_shift=shift, percent=percent)
            return _Choice(None, None, UNCHANGED + ("value-collision" if free is not None else "no-rule"), {})
        return _Choice(None, values.fine_type, "rule", values.tokens, pluralize_after)

    def _candidate_names(self, item_id: str) -> tuple[tuple[str, str, NameForm], ...]:
        """The item's names (KB order, demonyms appended) that are not excluded, as ``(name, key, form)``;
        cached per item (a KB snapshot is fixed)."""
        cached = self._names_cache.get(item_id)
        if cached is not None:
            return cached
        out: list[tuple[str, str, NameForm]] = []
        keys: set[str] = set()
        for name in [*self.kb.names(item_id), *self.kb.demonyms(item_id)]:
            key = name_key(name)
            if not key or key in keys or key in self._excluded or _bare(key) in self._excluded:
                continue
            keys.add(key)
            out.append((name, key, form_of(name)))
        if len(self._names_cache) > 200_000:
            self._names_cache.clear()
        found = self._names_cache[item_id] = tuple(out)
        return found

    def _pick(
        self, candidates: Sequence[Candidate], own: str, forms: list[NameForm], rng: random.Random, taken: set[str]
    ) -> tuple[Candidate, list[list[str]]] | None:
        n = len(candidates)
        if n == 0:
            return None

        def indices() -> Iterator[int]:  # random draws, then a scan from a random offset
            for _ in range(min(self.config.max_draws, n)):
                yield rng.randrange(n)
            offset = rng.randrange(n)
            for j in range(min(n, self.config.max_scan)):
                yield (offset + j) % n

        for i in indices():
            candidate = candidates[i]
            if candidate.item_id == own:
                continue
            pool = [(name, form) for name, key, form in self._candidate_names(candidate.item_id) if key not in taken]
            usable = _names_for_forms(pool, forms)
            if usable is not None:
                return candidate, usable
        return None


def _start(doc: Document, seed: int, value_types: tuple[str, ...]) -> _DocumentRenaming:
    """The renaming of ``doc`` before any choice: names, the overlap rule, the names in use, the year offset."""
    mention_names = [mention.name for entity in doc.entities for mention in entity.mentions]
    taken = {name.casefold() for name in mention_names} | {name_key(name) for name in mention_names}
    year_shift = None
    if "TIME" in value_types:
        time_names = [m.tokens(doc.sents) for entity in doc.entities if entity.type == "TIME" for m in entity.mentions]
        if time_names:
            year_shift = document_year_shift(time_names, random.Random(f"{seed}|{doc.key}|years"))
    names = {e: _ordered_names(doc, e) for e in range(len(doc.entities))}
    return _DocumentRenaming(doc, seed, RenameReport(year_shift=year_shift), names, _overlapping_entities(doc), taken)


def _ordered_names(doc: Document, e: int) -> list[tuple[str, list[str]]]:
    """Distinct names of entity ``e``, most frequent first, each with its first mention's tokens."""
    mentions = doc.entities[e].mentions
    first = {mention.name: mention for mention in reversed(mentions)}  # each name's first mention
    counts = Counter(mention.name for mention in mentions)  # ties: first appearance first
    return [(name, first[name].tokens(doc.sents)) for name, _ in counts.most_common()]


def _names_for_forms(pool: list[tuple[str, NameForm]], forms: list[NameForm]) -> list[list[str]] | None:
    """New tokens for each original name's form from an item's unused ``(name, form)`` pool, or ``None`` when the
    item cannot serve every form.

    Each original name gets an unused name of the same hard form (a plain one may take an acronym),
    preferring the same leading article and plural; a possessive gets a name of its own plus its ending.
    """
    if len(pool) < sum(not f.possessive for f in forms) or not pool:
        return None
    used: set[int] = set()
    out: list[list[str] | None] = [None] * len(forms)
    for i in sorted(range(len(forms)), key=lambda i: bool(forms[i].possessive)):  # stems before possessives
        want = forms[i]
        best, best_score = -1, -1
        for j, (_, form) in enumerate(pool):
            if j in used or form.possessive:
                continue
            if form.hard == want.hard:
                score = 4 + (form.article == want.article) + (form.plural == want.plural)
            elif want.hard == PLAIN and form.hard == ACRONYM:
                score = (form.article == want.article) + (form.plural == want.plural)
            else:
                continue
            if score > best_score:
                best, best_score = j, score
                if score == 6:
                    break  # 6 is the top score: no later name can beat it
        if best < 0:
            return None
        used.add(best)
        out[i] = tokenize_name(pool[best][0]) + list(want.possessive)
    return out  # type: ignore[return-value]


def _records(work: _DocumentRenaming) -> tuple[list[Substitution], dict[int, dict[str, list[str]]]]:
    """The substitution records (one per distinct original name of a renamed entity, one per unchanged entity),
    each entity's outcome in the report, and the original names of the renamed entities (for the leak check)."""
    subs: list[Substitution] = []
    originals: dict[int, dict[str, list[str]]] = {}
    for e, names in work.names.items():
        choice = work.choices.get(e) or work.unchanged[e]
        work.report.outcomes[e] = choice.match
        if e in work.choices:
            originals[e] = dict(names)
            pairs = [(name, " ".join(choice.new_tokens[name])) for name, _ in names]
        else:  # one record, the most frequent name
            pairs = [(names[0][0], names[0][0])]
        subs += [Substitution(e, choice.item_id, choice.fine_type, old, new, choice.match) for old, new in pairs]
    return subs, originals


def _replacements(
    doc: Document, choices: dict[int, _Choice]
) -> tuple[list[SpanReplacement], dict[tuple[int, int], str]]:
    """Every mention of a renamed entity as a span replacement, and its new ``name`` by (entity, mention)."""
    replacements, new_names = [], {}
    for e, choice in choices.items():
        for m, mention in enumerate(doc.entities[e].mentions):
            tokens = choice.new_tokens[mention.name]
            replacements.append(SpanReplacement(mention.sent_id, mention.start, mention.end, tuple(tokens)))
            new_names[(e, m)] = " ".join(tokens)
    return replacements, new_names


def _renamed_title(doc: Document, choices: dict[int, _Choice]) -> str:
    """The title, replaced when it equals an original name of a renamed entity (the last such entity wins)."""
    title = doc.title
    title_key = name_key(doc.title)
    for choice in choices.values():
        for name, tokens in choice.new_tokens.items():
            if title_key == name_key(name):
                title = " ".join(tokens)
    return title


_PERCENT_WORDS = ("%", "percent", "per", "pct")


def _value_context(doc: Document, e: int) -> tuple[bool, tuple[tuple[int, int], ...], bool]:
    """``(percent, (mention, offset) of each noun outside to pluralise, agreement impossible)`` for a value entity.

    When the noun a count of one counts cannot be told, or belongs to another mention ("one Oscar"), the
    entity stays unchanged (``no-number-agreement``) rather than the text guessing.
    """
    entity = doc.entities[e]
    covered = doc.covered()
    percent = False
    after: list[tuple[int, int]] = []
    blocked = False
    for m, mention in enumerate(entity.mentions):
        sent = doc.sents[mention.sent_id]
        tokens = sent[mention.start : mention.end]
        nxt = sent[mention.end] if mention.end < len(sent) else ""
        percent = percent or "%" in tokens or "percent" in tokens or nxt.lower() in _PERCENT_WORDS
        inner = [i for i in range(len(tokens) - 1) if is_count_of_one(tokens, i)]
        blocked = blocked or any(counted_noun(tokens[i + 1 :]) is None for i in inner)
        if not (tokens and is_count_of_one(tokens, len(tokens) - 1)):
            continue
        noun = counted_noun(sent[mention.end :])
        if noun == NO_NOUN:  # "one Oscar": the name counted is another mention's, which must not change
            blocked = blocked or (nxt.isalpha() and mention.end in covered.get(mention.sent_id, ()))
        elif noun is None or any(mention.end + k in covered.get(mention.sent_id, ()) for k in range(noun + 1)):
            blocked = True
        else:
            after.append((m, noun))
    return percent, tuple(after), blocked


def _settle_value_collisions(doc: Document, choices: dict[int, _Choice], unchanged: dict[int, _Choice]) -> None:
    """Leave unchanged (``value-collision``) each shifted TIME value equal to a name that stays in the text,
    until none is: "2007" -> "2010" is fine only while the entity named "2010" moves on too."""
    while True:
        kept = {name_key(m.name) for e in unchanged for m in doc.entities[e].mentions}
        clash = [
            e
            for e, choice in choices.items()
            if choice.match == "rule" and any(name_key(" ".join(t)) in kept for t in choice.new_tokens.values())
        ]
        if not clash:
            return
        for e in clash:
            del choices[e]
            unchanged[e] = _Choice(None, None, UNCHANGED + "value-collision", {})


def _agree(doc: Document, renamed: Document, choices: dict[int, _Choice]) -> tuple[int, int]:
    """Make "a"/"an" before each substituted mention agree with its new name and pluralise nouns after counts
    of one, in ``renamed`` (one token for one: no span moves); returns ``(articles fixed, nouns pluralised)``."""
    edits: list[tuple[int, int, str, bool]] = []  # (sentence, position, new token, is an article)
    sents = renamed.sents
    covered = renamed.covered()
    for e, choice in choices.items():
        mentions = renamed.entities[e].mentions
        for mention in mentions:
            sent = sents[mention.sent_id]
            i = mention.start - 1
            if i < 0 or sent[i] not in INDEFINITE:
                continue
            want = indefinite_article(sent[mention.start : mention.end])
            if sent[i].lower() != want and i not in covered.get(mention.sent_id, ()):
                edits.append((mention.sent_id, i, with_case(sent[i], want), True))
        for m, offset in choice.pluralize_after:
            mention = mentions[m]
            sent = renamed.sents[mention.sent_id]
            if mention.end + offset < len(sent) and not is_one(sent[mention.end - 1]):
                edits.append((mention.sent_id, mention.end + offset, pluralize(sent[mention.end + offset]), False))
    for sent_id, i, token, _ in edits:
        if renamed.sents[sent_id] is doc.sents[sent_id]:
            renamed.sents[sent_id] = list(renamed.sents[sent_id])
        renamed.sents[sent_id][i] = token
    articles = sum(is_article for *_, is_article in edits)
    return articles, len(edits) - articles


def rename_dataset(dataset, pipeline: RenamingPipeline, seeds: Sequence[int], num_proc: int = 1, batch_size: int = 64):
    """Renamed copies of every row of a document ``datasets.Dataset``, seed-major, the same for any ``num_proc``
    (worker processes of the driver, each taking ``batch_size`` documents at a time)."""
    missing = set(DOCUMENT_FEATURES) - set(dataset.column_names)
    if missing:
        raise ValueError(f"the dataset lacks document columns {sorted(missing)}; build it with documents_to_dataset")
    if not seeds:
        raise ValueError("rename_dataset needs at least one seed")
    driver = RenamingDriver(pipeline, num_proc=num_proc, chunk_size=batch_size)
    return documents_to_dataset(driver.rename_documents(dataset_to_documents(dataset), seeds))
