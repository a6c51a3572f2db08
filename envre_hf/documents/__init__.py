"""Stage 1 of the data's trip: typed DocRED documents, their file formats and validation."""

from .errors import DocumentError
from .formats import from_dict, from_docred, from_linked, to_docred, to_linked
from .io import check_unique_keys, iter_documents, read_raw_documents, write_documents
from .relations import DOCRED_RELATIONS, NO_RELATION, RelationSchema, RelationType, docred_schema
from .sources import read_documents
from .schema import ENTITY_TYPES, Document, Entity, Mention, Relation, Substitution
from .validation import QuirkCounts, Quirks, count_quirks, document_quirks, validate_document, validate_documents

#: The ``datasets`` bridge is imported on first use: ``datasets`` (with pandas and pyarrow) takes most of a
#: second to import, which a job that only reads JSON (``envre evaluate --predictions``) should not pay.
_HF_NAMES = frozenset({"DOCUMENT_FEATURES", "dataset_to_documents", "document_from_row", "document_to_row", "documents_to_dataset"})


def __getattr__(name: str):
    if name in _HF_NAMES:
        from . import hf  # lazy: see above

        return getattr(hf, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "DOCRED_RELATIONS",
    "DOCUMENT_FEATURES",
    "ENTITY_TYPES",
    "NO_RELATION",
    "Document",
    "DocumentError",
    "Entity",
    "Mention",
    "QuirkCounts",
    "Quirks",
    "Relation",
    "RelationSchema",
    "RelationType",
    "Substitution",
    "check_unique_keys",
    "count_quirks",
    "dataset_to_documents",
    "docred_schema",
    "document_from_row",
    "document_quirks",
    "document_to_row",
    "documents_to_dataset",
    "from_dict",
    "from_docred",
    "from_linked",
    "iter_documents",
    "read_documents",
    "read_raw_documents",
    "to_docred",
    "to_linked",
    "validate_document",
    "validate_documents",
    "write_documents",
]
