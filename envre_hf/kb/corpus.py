"""CorpusKB: an offline knowledge base of a pool of DocRED-format documents, typed by relation roles
(docs/renaming.md#corpus-kb); pool entities whose name contradicts their type are never offered (:func:`evident_kind`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from ..documents import Document, docred_schema
from ..documents.tokenize import tokenize_name
from .base import Candidate, KnowledgeBase
from .demonyms import is_demonym

#: Role placeholder of the last type of an item's ladder: any pool entity of the coarse type.
ANY_ROLE = "*"
#: How the fallback step is reported in ``Substitution.match``.
FALLBACK = "coarse type fallback"
PREFIX = "corpus:"
#: Bumped when the candidate sets change for the same pool (part of the snapshot id).
INDEX_VERSION = 2

_EVENT_WORDS = frozenset(
    "Championship Championships Cup Olympics Olympiad Awards Award Prize Festival Tournament Election Elections "
    "War Battle Contest Series Open Grand Prix Marathon Rally Expo Exhibition Summit".split()
)
_ORG_WORDS = frozenset(
    "Inc Inc. Ltd Ltd. Corporation Corp. Company Co. LLC PLC Records Party FC Club Association Society Institute "
    "Foundation Agency Ministry Department Council Committee Bank Airlines Group University College School".split()
)
_PLACE_WORDS = frozenset(
    "River Lake Mountain Mount Island Islands County Province District Avenue Road Bridge Bay Sea Ocean Valley "
    "Airport Station City Village Town".split()
)


def evident_kind(tokens: list[str]) -> str | None:
    """The kind a name evidently has whatever its annotation: ``"NUM"`` (digits only), ``"EVENT"`` (ends
    in Championships/Cup/Awards/...), ``"ORG"`` (Inc./Records/Party/University/...), ``"PLACE"``
    (River/County/Street/...), ``"PRODUCT"`` (``iTunes``, ``eBay``) or ``None`` (nothing evident)."""
    if not tokens:
        return None
    if all(re.fullmatch(r"[\d,.:–-]+", t) for t in tokens):
        return "NUM"
    last = tokens[-1]
    if last in _EVENT_WORDS or (len(tokens) > 1 and tokens[-2:] == ["Grand", "Prix"]):
        return "EVENT"
    if last in _ORG_WORDS:
        return "ORG"
    if last in _PLACE_WORDS:
        return "PLACE"
    if re.fullmatch(r"[a-z]{1,2}[A-Z]\w*", tokens[0]):
        return "PRODUCT"
    return None


#: Evident kinds a coarse type cannot have (only clear contradictions; ORG/LOC overlap in DocRED).
_CONTRADICTS = {
    "PER": {"NUM", "EVENT", "ORG", "PLACE", "PRODUCT"},
    "LOC": {"NUM", "EVENT", "PRODUCT"},
    "ORG": {"NUM", "EVENT"},
    "MISC": {"NUM"},
}


def is_pool_noise(coarse: str, names: list[str]) -> bool:
    """Whether a pool entity's most frequent name contradicts its coarse type (see :func:`evident_kind`)."""
    return bool(names) and evident_kind(names[0].split(" ")) in _CONTRADICTS.get(coarse, ())


def role_signature(doc: Document, entity_index: int) -> str:
    """The fine-grained type of an entity: ``"<coarse>|<role>|..."`` with roles sorted."""
    return _signatures(doc)[entity_index]


def _signatures(doc: Document) -> list[str]:
    roles: list[set[str]] = [set() for _ in doc.entities]
    for rel in doc.relations:
        if 0 <= rel.h < len(roles):
            roles[rel.h].add(f"h:{rel.r}")
        if 0 <= rel.t < len(roles):
            roles[rel.t].add(f"t:{rel.r}")
    return ["|".join([entity.type, *sorted(r)]) for entity, r in zip(doc.entities, roles)]


def describe_type(type_id: str) -> str:
    """Human-readable form of a signature, e.g. ``"PER; head of P569 date of birth"``."""
    coarse, *roles = type_id.split("|")
    names = docred_schema().id2name
    parts = [coarse]
    for role in roles:
        side, _, rel = role.partition(":")
        parts.append(f"{'head' if side == 'h' else 'tail'} of {rel} {names.get(rel, '')}".rstrip())
    return "; ".join(parts)


def _entity_names(doc: Document, entity_index: int) -> list[str]:
    """Distinct token forms of an entity's mentions, most frequent first (first appearance breaks ties)."""
    counts: Counter = Counter()
    for mention in doc.entities[entity_index].mentions:
        tokens = mention.tokens(doc.sents)
        joined = " ".join(tokens)
        # only names the DocRED tokenizer reproduces, so a name re-enters text with its own tokens
        if joined.strip() and tokenize_name(joined) == tokens:
            counts[joined] += 1
    return [name for name, _ in counts.most_common()]


class CorpusKB(KnowledgeBase):
    """Offline KB over ``pool`` (e.g. Re-DocRED dev when renaming test). See the module docstring."""

    name = "corpus"

    def __init__(self, pool: Sequence[Document], cache_size: int = 65536):
        self._ids: list[str] = []
        self._names: list[list[str]] = []
        self._types: list[str] = []
        self._popularity: list[int] = []
        self._index: dict[str, int] = {}
        self._postings: dict[tuple[str, str], set[int]] = {}
        self._by_coarse: dict[str, list[int]] = {}
        #: Pool entities never offered as candidates (see :func:`is_pool_noise`).
        self.noise = 0
        digest = hashlib.sha256(f"v{INDEX_VERSION}".encode())
        for doc in pool:
            signatures = _signatures(doc)
            involvement = Counter(e for rel in doc.relations for e in (rel.h, rel.t))
            for e in range(len(doc.entities)):
                item_id = f"{PREFIX}{doc.key}#{e}"
                if item_id in self._index:
                    continue  # a duplicate document key: the first copy wins
                i = len(self._ids)
                names = _entity_names(doc, e)
                coarse, *roles = signatures[e].split("|")
                self._ids.append(item_id)
                self._names.append(names)
                self._types.append(signatures[e])
                self._popularity.append(involvement[e])
                self._index[item_id] = i
                if is_pool_noise(coarse, names):
                    self.noise += 1
                else:
                    self._by_coarse.setdefault(coarse, []).append(i)
                    for role in roles:
                        self._postings.setdefault((coarse, role), set()).add(i)
                digest.update(f"{item_id}\t{signatures[e]}\t{chr(31).join(names)}\n".encode())
        self._snapshot = f"corpus:{len(self._ids)}:{digest.hexdigest()[:16]}"
        self._external: dict[str, tuple[str, list[str]]] = {}
        self._cache_size = cache_size
        self._make_caches()

    def _make_caches(self) -> None:
        self._query = lru_cache(maxsize=self._cache_size)(self._compute)
        self._match = lru_cache(maxsize=self._cache_size)(self._matching)

    def __len__(self) -> int:
        return len(self._ids)

    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_query", "_match")}  # rebuilt in workers
        return {**state, "_external": {}}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._make_caches()

    def link(self, doc: Document, entity_index: int) -> str | None:
        """The pool item of a pool document's entity; other documents' entities are registered on the fly
        (as ``corpus:<key>#<index>~external`` when a different pool entity has that id)."""
        signature = role_signature(doc, entity_index)
        item_id = f"{PREFIX}{doc.key}#{entity_index}"
        i = self._index.get(item_id)
        if i is not None:
            if self._types[i] == signature and self._names[i] == _entity_names(doc, entity_index):
                return item_id
            item_id += "~external"
        if len(self._external) > 100_000:
            self._external.clear()
        self._external[item_id] = (signature, _entity_names(doc, entity_index))
        return item_id

    def types(self, item_id: str) -> list[str]:
        """The item's signature, then its coarse type with :data:`ANY_ROLE`: when every compatible candidate is
        unusable (own item, names taken or isolated), the pipeline tries that instead of giving up."""
        known = self._known(item_id)
        if known is None:
            return []
        signature = known[0]
        coarse = signature.split("|", 1)[0]
        return [signature] if signature == coarse else [signature, f"{coarse}|{ANY_ROLE}"]

    def names(self, item_id: str) -> list[str]:
        known = self._known(item_id)
        return list(known[1]) if known else []

    def _known(self, item_id: str) -> tuple[str, list[str]] | None:
        """(signature, names) of a pool item or of an entity :meth:`link` registered."""
        i = self._index.get(item_id)
        return (self._types[i], self._names[i]) if i is not None else self._external.get(item_id)

    def demonyms(self, item_id: str) -> list[str]:
        """The item's demonym-form names (its mentions such as "American"), most frequent first."""
        return [name for name in self.names(item_id) if is_demonym(name.split(" "))]

    def popularity(self, item_id: str) -> int | None:
        i = self._index.get(item_id)
        return None if i is None else self._popularity[i]

    def snapshot_id(self) -> str:
        return self._snapshot

    def candidates(self, type_id: str, min_names: int, exclude: frozenset[str] = frozenset()) -> list[Candidate]:
        """Pool entities compatible with ``type_id`` with >= ``min_names`` names, in pool order."""
        found = self._query(type_id, min_names)
        if exclude and any(item in self._index for item in exclude):
            return [c for c in found if c.item_id not in exclude]
        return list(found)

    def _matching(self, coarse: str, roles: tuple[str, ...], min_names: int) -> tuple[int, ...]:
        """Pool indices (in pool order) of ``coarse`` entities playing every role, with enough names."""
        if not roles:
            pool: Sequence[int] = self._by_coarse.get(coarse, [])
        else:
            sets = [self._postings.get((coarse, r)) for r in roles]
            if any(s is None for s in sets):
                return ()
            sets.sort(key=len)
            pool = sorted(sets[0].intersection(*sets[1:]) if len(sets) > 1 else sets[0])
        return tuple(i for i in pool if len(self._names[i]) >= min_names)

    def _candidates(self, coarse: str, roles: tuple[str, ...], min_names: int, match: str) -> tuple[Candidate, ...]:
        return tuple(Candidate(self._ids[i], match) for i in self._match(coarse, roles, min_names))

    def _compute(self, type_id: str, min_names: int) -> tuple[Candidate, ...]:
        coarse, *roles = type_id.split("|")
        if roles == [ANY_ROLE]:
            return self._candidates(coarse, (), min_names, f"relaxed:{FALLBACK}")
        if self._match(coarse, tuple(roles), min_names):
            return self._candidates(coarse, tuple(roles), min_names, "exact")
        # relax: drop the least common role first (it is what makes the query unsatisfiable)
        order = sorted(roles, key=lambda r: (len(self._postings.get((coarse, r), ())), r))
        for n in range(1, len(order) + 1):
            dropped = order[:n]
            kept = tuple(r for r in roles if r not in dropped)
            if self._match(coarse, kept, min_names):
                how = f"dropped {','.join(dropped)}" if kept else "coarse type only"
                return self._candidates(coarse, kept, min_names, f"relaxed:{how}")
        return ()
