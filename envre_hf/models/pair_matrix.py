"""The entity-pair matrix of the KD-DocRE and DocuNet heads: a document's pairs as the cells of a square (row = head
entity, column = tail entity) at least ``matrix_size`` entities wide, as the released codes' fixed 42 x 42 matrix.
Documents of one side are stacked into one ``G x S x S x C`` tensor, so a document's cells never depend on what it is
batched with (the released code, whose documents all fit in 42, computes exactly this)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass
class PairGrid:
    """``entities``: per document its entity count; ``sides``: per document the side of its square."""

    entities: list[int]
    sides: list[int]

    @classmethod
    def build(cls, num_entities: Sequence[int], matrix_size: int | None, min_side: int = 1) -> PairGrid:
        """Squares of side ``max(matrix_size, n, min_side)`` (``matrix_size`` None: each document's own ``n``)."""
        entities = [int(n) for n in num_entities]
        return cls(entities, [max(matrix_size or 0, n, min_side) for n in entities])

    def groups(self) -> dict[int, list[int]]:
        """Side -> the documents of that side that have entities, in batch order."""
        out: dict[int, list[int]] = {}
        for d, side in enumerate(self.sides):
            if self.entities[d]:
                out.setdefault(side, []).append(d)
        return out

    def cell_offsets(self) -> list[int]:
        """Where each document's ``n x n`` cells start in :meth:`cells` order."""
        offsets, total = [], 0
        for n in self.entities:
            offsets.append(total)
            total += n * n
        return offsets

    def cells(self, device: torch.device | str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every document's ``n x n`` cells, self pairs included, head-major: batch-global head and tail entity
        indices and the document of each cell."""
        heads, tails, docs, offset = [], [], [], 0
        for d, n in enumerate(self.entities):
            grid = torch.arange(n, device=device)
            heads.append(grid.repeat_interleave(n) + offset)
            tails.append(grid.repeat(n) + offset)
            docs.append(torch.full((n * n,), d, dtype=torch.long, device=device))
            offset += n
        if not heads:
            empty = torch.zeros(0, dtype=torch.long, device=device)
            return empty, empty, empty
        return torch.cat(heads), torch.cat(tails), torch.cat(docs)

    def stack(self, cells: torch.Tensor, side: int, docs: Sequence[int], fill: torch.Tensor) -> torch.Tensor:
        """The :meth:`cells`-ordered ``cells`` (sum n^2 x C) of ``docs`` (all of side ``side``) as a
        ``len(docs) x side x side x C`` tensor whose other cells are ``fill`` (C, or a scalar tensor)."""
        out = fill.to(cells.dtype).expand(len(docs), side, side, cells.size(-1)).clone()
        offsets = self.cell_offsets()
        for p, d in enumerate(docs):
            n = self.entities[d]
            out[p, :n, :n] = cells[offsets[d] : offsets[d] + n * n].view(n, n, -1)
        return out

    def stack_repeating(self, cells: torch.Tensor, side: int, docs: Sequence[int]) -> torch.Tensor:
        """Like :meth:`stack`, the rows and columns past a document's last entity repeating that entity (DocuNet's
        released padding of the entity attentions)."""
        offsets, index = self.cell_offsets(), []
        grid = torch.arange(side, device=cells.device)
        for d in docs:
            last = torch.clamp(grid, max=max(self.entities[d] - 1, 0))
            index.append(offsets[d] + (last.unsqueeze(1) * self.entities[d] + last.unsqueeze(0)))
        return cells[torch.stack(index)]

    def valid_cells(self, side: int, docs: Sequence[int], device: torch.device | str) -> torch.Tensor:
        """``len(docs) x side x side`` bool: the cells of two different real entities (a document's pairs)."""
        grid = torch.arange(side, device=device)
        counts = torch.tensor([self.entities[d] for d in docs], device=device).view(-1, 1, 1)
        real = (grid.view(1, -1, 1) < counts) & (grid.view(1, 1, -1) < counts)
        return real & (grid.view(1, -1, 1) != grid.view(1, 1, -1))

    def gather(
        self, maps: dict[int, torch.Tensor], hts: Sequence[Sequence[Sequence[int]]], empty: torch.Tensor
    ) -> torch.Tensor:
        """The cells of the pairs ``hts`` (per document ``[h, t]`` lists) from the stacked ``maps`` (side ->
        ``G x S x S x C``), ``sum_pairs x C`` in ``hts`` order; ``empty`` (0 x C) when there are no pairs."""
        if len(hts) != len(self.entities):
            raise ValueError(f"hts has {len(hts)} documents but entity_pos has {len(self.entities)}")
        where = {d: (side, p) for side, docs in self.groups().items() for p, d in enumerate(docs)}
        picks: dict[int, list[tuple[int, int, int, int]]] = {}
        row = 0
        for d, pairs in enumerate(hts):
            for h, t in pairs:
                if not (0 <= h < self.entities[d] and 0 <= t < self.entities[d]):
                    raise ValueError(f"document {d} of the batch: hts refers to an entity outside 0..{self.entities[d] - 1}")
                side, p = where[d]
                picks.setdefault(side, []).append((p, int(h), int(t), row))
                row += 1
        if row == 0:
            return empty
        parts, rows = [], []
        for side, chosen in picks.items():
            p, h, t, r = torch.tensor(chosen, dtype=torch.long, device=empty.device).T
            parts.append(maps[side][p, h, t])
            rows.append(r)
        values = torch.cat(parts)
        return values.new_empty((row, values.size(-1))).index_copy(0, torch.cat(rows), values)
