"""envre-hf: robustness of document-level relation extraction to entity name variations.

Stages, one subpackage each, in the order data travels: ``documents`` -> ``kb`` ->
``renaming`` -> ``features`` -> ``models`` -> ``training`` -> ``metrics`` / ``analysis``
(and ``icl`` for in-context learning with LLMs).
"""

__version__ = "0.1.0"

from .documents import (  # noqa: E402
    Document,
    DocumentError,
    Entity,
    Mention,
    Relation,
    read_documents,
    write_documents,
)

__all__ = ["Document", "DocumentError", "Entity", "Mention", "Relation", "read_documents", "write_documents", "__version__"]
