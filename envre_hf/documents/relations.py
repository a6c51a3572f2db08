"""The DocRED relation inventory (package data); its order fixes every model's classes: class 0 is no relation,
relation ``i`` of the table class ``i + 1``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

NO_RELATION = "Na"


@dataclass(frozen=True)
class RelationType:
    id: str
    name: str


@lru_cache(maxsize=1)
def _load() -> tuple[RelationType, ...]:
    text = resources.files("envre_hf.documents").joinpath("data/docred_relations.json").read_text("utf-8")
    return tuple(RelationType(row["id"], row["name"]) for row in json.loads(text)["relations"])


class RelationSchema:
    """Maps relation P-ids to class indices and names (class 0 = :data:`NO_RELATION`)."""

    def __init__(self, relations: tuple[RelationType, ...] | list[RelationType]):
        self.relations = tuple(relations)
        self.id2name = {rel.id: rel.name for rel in self.relations}
        self.name2id = {rel.name: rel.id for rel in self.relations}
        self.rel2index = {NO_RELATION: 0, **{rel.id: i + 1 for i, rel in enumerate(self.relations)}}
        self.index2rel = {i: r for r, i in self.rel2index.items()}

    @property
    def num_labels(self) -> int:
        """Number of model classes, the no-relation class included (97 for DocRED)."""
        return len(self.relations) + 1

    def __contains__(self, rel_id: object) -> bool:
        return rel_id in self.id2name

    def __len__(self) -> int:
        return len(self.relations)

    def ids(self) -> list[str]:
        return [rel.id for rel in self.relations]


@lru_cache(maxsize=1)
def docred_schema() -> RelationSchema:
    """The 96 DocRED / Re-DocRED relation types."""
    return RelationSchema(_load())


DOCRED_RELATIONS: tuple[RelationType, ...] = _load()
