"""``envre predict``: relations from your own documents with a saved model (the document-relation-extraction pipeline).

``--input`` is a JSON list (``.json``) or JSON Lines (``.jsonl``; either gzipped) of DocRED documents or of
``{"text", "entities"?, "mentions"?}`` objects, or plain text (any other name: one document per block of lines
separated by blank lines; entities come from ``--ner``). ``--output`` is JSON Lines, one line per input
document in input order: ``{"index", "id", "relations": [...]}`` (the pipeline's output; see docs/predict.md).
Lines are written as documents are predicted; a rerun skips the documents already written (a line torn by a
crash is cut first), so an interrupted run resumes (``--overwrite`` starts the file over). Bad input stops the run with one line naming the input
document (by its position, or the line of a plain-text block or of a JSON Lines line that is not JSON) and the
field, exit status 2; the documents before it are written.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..atomic import load_jsonl_records, refuse_link
from ..documents import DocumentError
from ..documents.io import read_raw_documents, read_text
from .common import UsageError, add_option, add_precision_argument, existing_path, model_location, non_negative_int
from .common import positive_int


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
    add_option(parser, "output", "predictions, JSON Lines (continued when it exists)", required=True)
    add_option(parser, "overwrite", "start --output over instead of continuing it (replaced from its first new line)")
    add_text_arguments(parser)
    parser.add_argument("--threshold", type=probability,
                        help="predict a relation above this probability (default: the model's learned threshold)")
    parser.add_argument("--top-k", type=non_negative_int, default=None,
                        help="most relations per entity pair (default: the model's top_k; 0: no cap)")
    add_precision_argument(parser)
    parser.add_argument("--max-docs", type=non_negative_int, help="predict only the first N input documents")
    parser.add_argument("--batch-size", type=positive_int, default=4, help="documents per batch (default 4)")
    parser.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    add_option(parser, "progress", "no progress bar")


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


def check_input_kind(path: Path) -> None:
    """Refuse an ``--input`` that is no document file, naming what it is (a build, dataset or model folder, a
    Parquet shard) and what reads it, before anything is loaded."""
    wanted = "envre predict reads one file: DocRED .json / .jsonl documents, a .jsonl of texts, or plain text"
    if path.is_dir():
        from ..documents.build_folder import STATISTICS_FILE, build_splits  # lazy: start-up time

        splits = build_splits(path)
        if splits or (path / STATISTICS_FILE).is_file():
            raise UsageError(f"{path}: an envre build folder (splits: {', '.join(splits) or 'none'}); {wanted} "
                             "(envre probe --input and envre evaluate --gold read build folders)")  # fmt: skip
        if (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file():
            raise UsageError(f"{path}: a saved dataset folder; {wanted} (envre probe --input reads dataset folders)")
        if (path / "config.json").is_file():
            raise UsageError(f"{path}: a model folder (give it as --model); {wanted}")
        raise UsageError(f"{path}: a folder; {wanted}")
    if path.name.lower().endswith((".parquet", ".arrow")):
        raise UsageError(f"{path}: a {path.suffix[1:]} data file (of a build or dataset folder?); {wanted} "
                         "(envre probe --input reads those folders)")  # fmt: skip


def resumed(output: Path, inputs: Iterator[tuple[str, Any]], max_docs: int | None = None,
            overwrite: bool = False) -> int:
    """How many documents ``output`` already holds (a torn last line cut; none when ``overwrite``), checked against
    the first ``inputs``, which are consumed; an output of another input, or of more than ``max_docs`` documents,
    is refused."""
    if output.is_dir():
        raise UsageError(f"--output {output}: a folder; expected a JSON Lines file name")
    if not output.parent.is_dir():
        raise UsageError(f"--output {output}: no such folder {output.parent}")
    if overwrite:
        refuse_link(output)
        return 0
    done = load_jsonl_records(output)  # a torn last line is cut
    if max_docs is not None and len(done) > max_docs:
        raise UsageError(f"{output} already holds {len(done)} documents, more than --max-docs {max_docs}: pass "
                         "--overwrite to start it over, or use a new --output")  # fmt: skip
    for k, record in enumerate(done):
        where, item = next(inputs, (None, None))
        if where is None or record.get("index") != k or record.get("id") != document_key(item, where):
            raise UsageError(f"{output} holds predictions of another input (line {k + 1}): pass --overwrite to "
                             "replace them, or use a new --output")  # fmt: skip
    return len(done)


def run(args: argparse.Namespace) -> int:
    from ..models.prediction import load_for_inference  # lazy: start-up time

    path: Path = args.input
    check_input_kind(path)
    inputs = itertools.islice(read_inputs(path), args.max_docs)
    done = resumed(args.output, inputs, args.max_docs, args.overwrite)
    first = next(inputs, None)
    if first is None and not done:
        why = "--max-docs 0" if args.max_docs == 0 else "the file holds none"
        raise UsageError(f"{path}: no documents to predict ({why})")
    if first is not None and is_plain_text(path) and args.ner is None:
        raise UsageError(f"{path}: plain text needs --ner MODEL to find its entities")
    ner = model_location(args.ner, "--ner") if args.ner is not None else None
    if first is None:
        print(f"{done} documents in {args.output} (0 predicted now)")
        return 0
    model, tokenizer = load_for_inference(model_location(args.model), args.device)
    index = predict_into(args, model, tokenizer, ner, itertools.chain([first], inputs), done)
    print(f"{index} documents in {args.output} ({index - done} predicted now)")
    return 0


def predict_into(args: argparse.Namespace, model: Any, tokenizer: Any, ner: str | None,
                 inputs: Iterator[tuple[str, Any]], done: int) -> int:
    """Append one line per predicted document to ``--output`` (opened at the first line: a run that predicts
    nothing writes nothing); returns how many lines it holds. A bad document stops it naming where it is."""
    from tqdm.auto import tqdm  # lazy: start-up time

    from ..models.pipeline_docre import DocREPipeline  # lazy: start-up time (torch)

    pipe = DocREPipeline(model=model, tokenizer=tokenizer, device=model.device, ner=ner, cluster=args.cluster)
    fed: list[tuple[str, str]] = []

    def items() -> Iterator[Any]:
        for where, item in inputs:
            fed.append((where, document_key(item, where)))
            yield item

    options = {"threshold": args.threshold, "top_k": args.top_k, "autocast": args.precision}
    index = done
    with contextlib.ExitStack() as stack:
        bar = stack.enter_context(tqdm(desc="Predicting", unit="doc", initial=index, disable=args.no_progress))
        out = None
        try:
            for relations in pipe(items(), batch_size=args.batch_size, **options):
                if out is None:
                    out = stack.enter_context(open(args.output, "w" if args.overwrite else "a", encoding="utf-8"))
                record = {"index": index, "id": fed[index - done][1], "relations": relations}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                index += 1
                bar.update()
        except DocumentError as err:
            if err.doc_index is None:
                raise
            inner = DocumentError(err.reason, title=err.title, entity=err.entity, mention=err.mention,
                                  label=err.label, field=err.field)
            raise DocumentError(f"{args.input} {fed[err.doc_index][0]}: {inner}") from None
    return index
