"""``envre predict``: relations from your own documents with a saved model (the document-relation-extraction pipeline).

``--input`` is a JSON list (``.json``) or JSON Lines (``.jsonl``; either gzipped) of DocRED documents or of
``{"text", "entities"?, "mentions"?}`` objects, or plain text (any other name: one document per block of lines
separated by blank lines; entities come from ``--ner``). ``--output`` is JSON Lines, one line per input
document in input order: ``{"index", "id", "relations": [...]}`` (the pipeline's output; see docs/predict.md).
Lines are written as documents are predicted; a rerun skips the documents already written (a line torn by a
crash is cut first), so an interrupted run resumes. Bad input stops the run with one line naming the input
document (by its position, or the line of a plain-text block or of a JSON Lines line that is not JSON) and the
field, exit status 2; the documents before it are written.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..atomic import load_jsonl_records
from ..documents import DocumentError
from ..documents.io import read_raw_documents, read_text
from .common import UsageError, existing_path, model_location, non_negative_int, positive_int
from .common import add_precision_arguments, precision_of


def probability(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a probability strictly between 0 and 1, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="a DocRE model folder or Hub id (saved with its tokenizer)")
    parser.add_argument("--input", required=True, type=existing_path,
                        help="DocRED .json / .jsonl, .jsonl of {text, entities?, mentions?}, or plain text")
    parser.add_argument("--output", required=True, type=Path, help="predictions, JSON Lines (resumed when it exists)")
    add_text_arguments(parser)
    parser.add_argument("--threshold", type=probability,
                        help="predict a relation above this probability (default: the model's learned threshold)")
    parser.add_argument("--top-k", type=non_negative_int, default=None,
                        help="most relations per entity pair (default: the model's top_k; 0: no cap)")
    add_precision_arguments(parser)
    parser.add_argument("--batch-size", type=positive_int, default=4, help="documents per batch (default 4)")
    parser.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_text_arguments(parser: argparse.ArgumentParser) -> None:
    """How text inputs become documents (``envre predict`` and ``envre probe``)."""
    parser.add_argument("--ner", help="token-classification model (Hub id or folder) for text without entities")
    parser.add_argument("--cluster", choices=["alias", "exact"], default="alias",
                        help="how found mentions become entities: alias rules (default) or exact names")


def is_plain_text(path: Path) -> bool:
    """Any file not named .json / .jsonl (gzipped or not) is plain text, one document per block of lines."""
    return not path.name.lower().endswith((".json", ".json.gz", ".jsonl", ".jsonl.gz"))


def read_inputs(path: Path) -> Iterator[tuple[str, Any]]:
    """``(where, item)`` for every input document of ``path``: JSON and JSON Lines through the one document
    reader's container code (gzip, byte-order marks, errors naming the line), plain text by blocks of lines."""
    if not is_plain_text(path):
        for i, item in enumerate(read_raw_documents(path, keep_errors=True)):
            if isinstance(item, DocumentError):  # a JSON Lines line that is not JSON: raised when reached
                raise DocumentError(item.reason)
            yield f"document {i}", item
        return
    block: list[str] = []
    start = 0
    for n, line in enumerate(read_text(path).splitlines(), 1):
        if line.strip():
            start = start or n
            block.append(line)
        elif block:
            yield f"line {start}", "\n".join(block)
            block, start = [], 0
    if block:
        yield f"line {start}", "\n".join(block)


def document_key(item: Any, where: str) -> str:
    """What names a document in the output: its ``doc_id``, else its title, else where it is in the input."""
    if isinstance(item, dict):
        for field in ("doc_id", "title"):
            if isinstance(item.get(field), str) and item[field]:
                return item[field]
    return where


def run(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm  # lazy: start-up time

    from ..models.pipeline_docre import DocREPipeline  # lazy: start-up time (torch)
    from ..models.prediction import load_for_inference  # lazy: start-up time

    path: Path = args.input
    done = load_jsonl_records(args.output)  # a torn last line is cut
    inputs = read_inputs(path)
    for k, record in enumerate(done):
        where, item = next(inputs, (None, None))
        if where is None or record.get("index") != k or record.get("id") != document_key(item, where):
            raise UsageError(f"{args.output} holds predictions of another input (line {k + 1}): use a new --output")
    if is_plain_text(path) and args.ner is None:
        raise UsageError(f"{path}: plain text needs --ner MODEL to find its entities")
    model, tokenizer = load_for_inference(model_location(args.model), args.device)
    pipe = DocREPipeline(model=model, tokenizer=tokenizer, device=model.device, ner=args.ner, cluster=args.cluster)
    fed: list[tuple[str, str]] = []

    def items() -> Iterator[Any]:
        for where, item in inputs:
            fed.append((where, document_key(item, where)))
            yield item

    options = {"threshold": args.threshold, "top_k": args.top_k, "autocast": precision_of(args)}
    index = len(done)
    with open(args.output, "a", encoding="utf-8") as out, tqdm(
        desc="Predicting", unit="doc", initial=index, disable=args.no_progress
    ) as bar:
        try:
            for relations in pipe(items(), batch_size=args.batch_size, **options):
                record = {"index": index, "id": fed[index - len(done)][1], "relations": relations}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                index += 1
                bar.update()
        except DocumentError as err:
            if err.doc_index is None:
                raise
            inner = DocumentError(err.reason, title=err.title, entity=err.entity, mention=err.mention,
                                  label=err.label, field=err.field)
            raise DocumentError(f"{path} {fed[err.doc_index][0]}: {inner}") from None
    print(f"{index} documents in {args.output} ({index - len(done)} predicted now)")
    return 0
