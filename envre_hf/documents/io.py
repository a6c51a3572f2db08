"""Reading and writing document files: DocRED JSON (a list), JSON Lines, Linked-(Re-)DocRED, gzipped or not.
The one reader of every entry point: every problem is a :class:`DocumentError` naming file, document and field.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from ..atomic import PathLike, atomic_path
from .errors import DocumentError
from .formats import from_dict, to_docred, to_linked
from .schema import Document
from .validation import validate_document


_WRITERS = {"docred": to_docred, "linked": to_linked}
#: What a reader does with a bad document: ``"fail"`` (raise), or a callable ``(error, raw object)`` that skips it.
OnError = str | Callable[[DocumentError, Any], None]


def _is_jsonl(path: PathLike) -> bool:
    return str(path).endswith((".jsonl", ".jsonl.gz"))


def read_text(path: PathLike) -> str:
    """The text of ``path`` (gunzipped when the name ends in ``.gz``; a UTF-8 byte-order mark is dropped)."""
    path = Path(path)
    data = path.read_bytes()  # OSError (missing, a folder, unreadable) names the path itself
    if path.name.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise DocumentError(f"{path}: not a readable gzip file ({err})") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise DocumentError(
            f"{path}: not UTF-8 text (byte {err.start} is {data[err.start:err.start + 1]!r}); re-encode it as UTF-8"
        ) from None


def parse_json(text: str, path: PathLike, line: int | None = None) -> Any:
    """The JSON value of ``text`` read from ``path``: the one JSON parser of every file option, whose errors
    (invalid, nested too deeply, a million-digit number) name the file and line, never ``json``'s own text."""
    where = f"{path}: line {line}" if line is not None else str(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DocumentError(f"{where} is not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    except RecursionError:
        raise DocumentError(f"{where}: JSON nested too deeply to be a document") from None
    except ValueError as err:  # int('1' * 10**6): over sys.get_int_max_str_digits()
        raise DocumentError(f"{where}: {_oversized(err)}") from None


def _oversized(err: ValueError) -> str:
    return (f"a number too long to read (over {sys.get_int_max_str_digits()} digits; {err.__class__.__name__}); "
            "no valid value is that long")


def read_json(path: PathLike) -> Any:
    """The JSON value of the file ``path`` (gunzipped for ``.gz``), with :func:`parse_json`'s errors."""
    return parse_json(read_text(path), Path(path))


class _NoAliasLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses aliases: ``&a [*a, *a, ...]`` nested ten deep is gigabytes once expanded."""

    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise DocumentError(
                f"YAML alias *{event.anchor} at line {event.start_mark.line + 1}: aliases are not accepted in "
                "settings (write the value out)"
            )
        return super().compose_node(parent, index)


def parse_yaml(text: str, path: PathLike) -> Any:
    """The YAML value of ``text`` read from ``path``, refusing aliases (an alias bomb) and naming the file."""
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except DocumentError as err:
        raise DocumentError(f"{path}: {err}") from None
    except yaml.YAMLError as err:
        raise DocumentError(f"{path} is not valid YAML ({' '.join(str(err).split())})") from None
    except RecursionError:
        raise DocumentError(f"{path}: YAML nested too deeply") from None


#: A JSON escape of a UTF-16 surrogate (``\\ud800``-``\\udfff``): the only way text read as UTF-8 can hold one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any, where: str = "") -> str | None:
    """Where in ``value`` (a raw JSON document) a string holds a lone surrogate (``sents[0][2]``), else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return where or "(document)"
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, str) and _lone_surrogate(key) is not None:
            return f"{where}.{key!r}" if where else repr(key)
        found = _lone_surrogate(item, f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else key)
        if found is not None:
            return found
    return None


def _surrogate_error(obj: Any, index: int) -> DocumentError | None:
    """A :class:`DocumentError` for a document holding half of a UTF-16 pair (not Unicode text: it cannot be
    written as UTF-8, so every writer downstream would fail on it), naming the document and the field."""
    where = _lone_surrogate(obj)
    if where is None:
        return None
    title = obj.get("title") if isinstance(obj, dict) else None
    return DocumentError(
        "text with an unpaired UTF-16 surrogate escape (\\ud800-\\udfff): not Unicode text; fix the escape",
        doc_index=index, title=title if isinstance(title, str) and _lone_surrogate(title) is None else None,
        field=where,
    )


#: JSON's whitespace, and a decoder of one value at a position (the items of a list are parsed one at a time).
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODE_AT = json.JSONDecoder().raw_decode


def _json_list_items(text: str, path: Path) -> Iterator[Any]:
    """The items of the JSON list ``text`` one at a time, so that each can be let go before the next is parsed
    (a 16 MB file is never a whole tree in memory, which the garbage collector would walk again and again).
    Text that is not a well-formed list is parsed whole by :func:`parse_json`, which names the error."""
    skip = _WHITESPACE.match
    i = skip(text).end()
    if text.startswith("[", i):
        i = skip(text, i + 1).end()
        count = 0
        try:
            more = not text.startswith("]", i)
            while more:
                try:
                    item, i = _DECODE_AT(text, i)
                except ValueError as err:
                    if isinstance(err, json.JSONDecodeError):
                        raise
                    raise DocumentError(f"{path}: document {count}: {_oversized(err)}") from None
                count += 1
                yield item
                i = skip(text, i).end()
                more = text.startswith(",", i)
                if more:
                    i = skip(text, i + 1).end()
            if text.startswith("]", i) and skip(text, i + 1).end() == len(text):
                return
        except (json.JSONDecodeError, RecursionError):
            pass
        parse_json(text, path)  # raises the error json.loads finds
        raise DocumentError(f"{path} is not valid JSON")
    data = parse_json(text, path)
    if not isinstance(data, dict):  # a single document
        raise DocumentError(f"{path}: expected a JSON list of documents, got {type(data).__name__}")
    yield data


def _json_lines(text: str, path: Path, keep_errors: bool) -> Iterator[Any]:
    """The object of each line that is not blank; with ``keep_errors`` a line that is not JSON is its error."""
    for i, line in enumerate(text.splitlines()):
        if line.strip():
            try:
                yield parse_json(line, path, i + 1)
            except DocumentError as err:
                if not keep_errors:
                    raise
                yield err


def _raw_items(path: Path, keep_errors: bool) -> Iterator[Any]:
    """:func:`read_raw_documents`, one document at a time."""
    text = read_text(path)
    items = _json_lines(text, path, keep_errors) if _is_jsonl(path) else _json_list_items(text, path)
    surrogates = _SURROGATE_ESCAPE.search(text) is not None  # rare (a proper pair is also escaped so)
    for i, obj in enumerate(items):
        if isinstance(obj, DocumentError):
            obj = DocumentError(obj.reason, doc_index=i)
        elif surrogates and (err := _surrogate_error(obj, i)) is not None:
            if not keep_errors:
                raise err.located(None, None, file=path)
            obj = err
        yield obj


def read_raw_documents(path: PathLike, *, keep_errors: bool = False) -> list[Any]:
    """The JSON objects of a document file, not parsed yet; with ``keep_errors`` a JSON Lines line that is not
    JSON becomes a :class:`DocumentError` in the list (``--on-error skip`` lists it and goes on)."""
    return list(_raw_items(Path(path), keep_errors))


def parse_document(obj: Any, index: int, *, validate: bool = True) -> Document:
    """One raw document, parsed (and validated): any malformation is a :class:`DocumentError`."""
    try:
        doc = from_dict(obj, index)
    except DocumentError:
        raise
    except (TypeError, KeyError, AttributeError, ValueError) as err:  # e.g. a malformed provenance record
        title = obj.get("title") if isinstance(obj, dict) else None
        raise DocumentError(f"malformed document ({err})", doc_index=index,
                            title=title if isinstance(title, str) else None) from None
    if validate:
        validate_document(doc, index)
    return doc


def _check_key(seen: dict[str, int], doc: Document, index: int, source: PathLike | None) -> None:
    """Refuses a second document with the same key (``doc_id``, else ``title``) as one in ``seen`` (key: index)."""
    key, field = doc.key, "doc_id" if doc.doc_id is not None else "title"
    if not isinstance(key, str):
        raise DocumentError(f"expected a string, got {type(key).__name__}", doc_index=index, field=field)
    if key in seen:
        where = f"{source}: " if source is not None else ""
        raise DocumentError(
            f"{where}duplicate document key {key!r} (also document {seen[key]}); every document needs "
            f"its own {field}",
            doc_index=index,
            field=field,
        )
    seen[key] = index


def iter_documents(path: PathLike, *, validate: bool = True, on_error: OnError = "fail") -> Iterator[Document]:
    """Yield the documents of a DocRED / Linked JSON list or a JSON Lines file; keys are always checked.
    ``on_error``: see :data:`OnError` (the raw object is ``None`` for a line that is not JSON)."""
    path = Path(path)
    if on_error != "fail" and not callable(on_error):
        raise ValueError(f"on_error must be 'fail' or a callable, got {on_error!r}")
    seen: dict[str, int] = {}
    skip = None if on_error == "fail" else on_error
    for i, obj in enumerate(_raw_items(path, keep_errors=skip is not None)):  # one raw document in memory at a time
        try:
            if isinstance(obj, DocumentError):  # a JSON Lines line that is not JSON (kept for ``skip``)
                raise obj
            doc = parse_document(obj, i, validate=validate)
        except DocumentError as err:
            if skip is None:
                raise err if str(path) in str(err) else err.located(None, None, file=path) from None
            skip(err, None if isinstance(obj, DocumentError) else obj)
            continue
        _check_key(seen, doc, i, path)
        yield doc


def check_unique_keys(docs: Iterable[Document], source: PathLike | None = None) -> None:
    """Raise :class:`DocumentError` when two documents share a key."""
    seen: dict[str, int] = {}
    for i, doc in enumerate(docs):
        _check_key(seen, doc, i, source)


def write_documents(docs: Iterable[Document], path: PathLike, dialect: str = "docred") -> Path:
    """Write ``docs`` atomically to ``path`` as a JSON list (JSON Lines for ``.jsonl``), in the ``"docred"`` or
    ``"linked"`` dialect."""

    if dialect not in _WRITERS:
        raise ValueError(f"unknown dialect {dialect!r}; expected one of {sorted(_WRITERS)}")
    convert = _WRITERS[dialect]
    path = Path(path)
    with atomic_path(path) as tmp:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(tmp, "wt", encoding="utf-8") as fh:
            if _is_jsonl(path):
                for doc in docs:
                    fh.write(json.dumps(convert(doc), ensure_ascii=False))
                    fh.write("\n")
            else:
                json.dump([convert(doc) for doc in docs], fh, ensure_ascii=False)
    return path
