"""The one exception type for malformed documents."""

from __future__ import annotations


class DocumentError(ValueError):
    """A document breaks the DocRED format. The message names the document, entity, mention and field."""

    def __init__(
        self,
        message: str,
        *,
        doc_index: int | None = None,
        title: str | None = None,
        entity: int | None = None,
        mention: int | None = None,
        label: int | None = None,
        field: str | None = None,
    ):
        self.doc_index = doc_index
        self.title = title
        self.entity = entity
        self.mention = mention
        self.label = label
        self.field = field
        self.reason = message
        where = []
        if doc_index is not None:
            where.append(f"document {doc_index}")
        if title is not None:
            where.append(f"({title!r})" if where else f"document {title!r}")
        if entity is not None:
            where.append(f"entity {entity}")
        if mention is not None:
            where.append(f"mention {mention}")
        if label is not None:
            where.append(f"label {label}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{' '.join(where)}: {message}" if where else message)

    def located(self, doc_index: int | None, title: str | None, file: object = None) -> "DocumentError":
        """The same error with the document's position (and its ``file``) filled in: readers know it, parsers
        may not."""
        return DocumentError(
            self.reason if file is None else f"{self.reason} (in {file})",
            doc_index=doc_index if self.doc_index is None else self.doc_index,
            title=title if self.title is None else self.title,
            entity=self.entity,
            mention=self.mention,
            label=self.label,
            field=self.field,
        )
