#!/usr/bin/env python3
"""A family of envre-hf against its original code, on the same weights and real Re-DocRED test documents.

``--original PATH`` is a copy of the original repository that you fetched yourself (nothing of it is part of this
project): THU-BPM/Env-DocRE for ``ncrl`` (its ``evrt/model.py``), tonytan48/KD-DocRE for ``kd_docre`` (``model.py``,
which needs the PyPI packages ``axial_attention`` and ``opt_einsum``), zjunlp/DocuNet for ``docunet``
(``model_balanceloss.py``; ``opt_einsum``). DocuNet's ``model_balanceloss.py`` imports allennlp (not installable on
Python 3.11) for its similarity-based channel only: the check gives it stand-ins that refuse to be called.

Both models are built on the same encoder (MiniLM-L6 by default) with the originals' BERT-base script defaults and
envre-hf's defaults; our weights are copied into the original by name; then, on the same batches:

* parameter count and shapes of the head (the parameters the original's forward uses);
* logits of every pair (eval mode, fp32): max absolute difference <= 1e-4; the decoded triples identical (the
  classifier's biases shifted first so that about 10% of the pairs get a relation: untrained, every pair would get
  ``top_k`` of them);
* the training loss (train mode, encoder dropout off so both are deterministic; KD-DocRE's training-loop negative
  mask given to the original) and the eval-mode loss: within 1e-5; the head's gradients after the training loss
  of the first two documents, both models in float64 copies: their relative L2 distance <= 1e-6;
* the time of a training step (forward + backward) and of prediction (forward), best of ``--repeats``, both codes.

Exit status 1 when a comparison fails. ``--json`` writes the figures with the command and the machine:

    python3 benchmarks/check_family_equal.py --family kd_docre --original /path/to/KD-DocRE \\
        --json benchmarks/results/family_equal_kd_docre.json
"""

from __future__ import annotations

import argparse
import copy
import re
import shlex
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from _bench_common import TEST, machine, minilm_path, write_json

@dataclass(frozen=True)
class OriginalCode:
    """Where a repository's model lives (``folder/module.py``, class ``name``), how our parameter names map to its
    names (regex, replacement; the encoder first), and what it defines but never calls."""

    folder: str
    module: str
    name: str
    renames: tuple[tuple[str, str], ...]
    unused: tuple[str, ...] = ()

    @property
    def encoder_prefix(self) -> str:
        return self.renames[0][1]


#: By repository (a family's ``Family.original``): the originals this check can build.
ORIGINAL_CODE = {
    "THU-BPM/Env-DocRE": OriginalCode("evrt", "model", "DocREModel", ((r"^encoder\.transformer\.", "model."),)),
    "tonytan48/KD-DocRE": OriginalCode(".", "model", "DocREModel_KD", (
        (r"^encoder\.transformer\.", "model."),
        (r"^axial\.(\d+)\.columns\.", r"axial_transformer.axial_attns.\1.axial_attentions.0.fn."),
        (r"^axial\.(\d+)\.rows\.", r"axial_transformer.axial_attns.\1.axial_attentions.1.fn."),
        (r"^axial\.(\d+)\.ffn\.", r"axial_transformer.ffns.\1."),
        (r"^axial\.(\d+)\.norm\.", r"axial_transformer.lns.\1."),
    ), unused=("bilinear.",)),
    "zjunlp/DocuNet": OriginalCode(".", "model_balanceloss", "DocREModel", (
        (r"^encoder\.transformer\.", "bert_model."),
        (r"^channel_projection\.", "liner."),
        (r"^unet\.(inc|up1|up2)\.", r"segmentation_net.\1.conv.double_conv."),
        (r"^unet\.(down1|down2)\.", r"segmentation_net.\1.maxpool_conv.1.double_conv."),
        (r"^unet\.out\.", "segmentation_net.outc.conv."),
    )),
}


def original_of(family: str) -> OriginalCode:
    from envre_hf.models.registry import get_family

    return ORIGINAL_CODE[get_family(family).original]


def _refusing_module(name: str, *attributes: str) -> types.ModuleType:
    """A stand-in module whose attributes refuse to be used (imports the original makes for code we do not run)."""
    module = types.ModuleType(name)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"{name} is a stand-in: the check does not run the original's code that needs it")

    for attribute in attributes:
        setattr(module, attribute, refuse)
    return module


def import_original(family: str, root: Path) -> type:
    """The original's model class, imported from the user's copy ``root``."""
    code = original_of(family)
    folder, module_name, class_name = code.folder, code.module, code.name
    path = (root / folder).resolve()
    if not (path / f"{module_name}.py").is_file():
        raise SystemExit(f"check_family_equal: {path / module_name}.py not found: is {root} a copy of the original?")
    if family == "docunet":
        sys.modules.setdefault("allennlp", types.ModuleType("allennlp"))
        sys.modules.setdefault("allennlp.modules", types.ModuleType("allennlp.modules"))
        sys.modules.setdefault("allennlp.modules.matrix_attention", _refusing_module(
            "allennlp.modules.matrix_attention",
            "DotProductMatrixAttention", "CosineMatrixAttention", "BilinearMatrixAttention",
        ))
        sys.modules.setdefault("element_wise", _refusing_module("element_wise", "ElementWiseMatrixAttention"))
    sys.path.insert(0, str(path))
    module = __import__(module_name)
    return getattr(module, class_name)


def build_original(family: str, cls: type, ours: Any, encoder: str) -> torch.nn.Module:
    """The original model on ``encoder`` with its BERT-base script settings, holding our weights."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    config = AutoConfig.from_pretrained(encoder, num_labels=ours.config.num_labels, hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0)  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    config.cls_token_id, config.sep_token_id, config.transformer_type = tokenizer.cls_token_id, tokenizer.sep_token_id, "bert"
    encoder_model = AutoModel.from_pretrained(encoder, config=config, attn_implementation="eager")
    # The originals read the attentions as ``output[-1]`` (transformers 3/4); transformers 5 ends the output with
    # ``cross_attentions`` (empty for an encoder): hand them the tuple they were written for.
    encoder_model.register_forward_hook(lambda module, args, out: (out.last_hidden_state, out.pooler_output, out.attentions))
    if family == "ncrl":
        args = argparse.Namespace(clsloss_shift=ours.config.ncrl_margin, clsloss_reg=True, num_labels=ours.config.top_k)
        model = cls(args, config, encoder_model, block_size=ours.config.block_size)
    elif family == "kd_docre":
        args = argparse.Namespace(gamma_pos=1.0, gamma_neg=1.0)
        model = cls(args, config, encoder_model, num_labels=ours.config.top_k)
    else:
        args = argparse.Namespace(unet_in_dim=3, unet_out_dim=256, down_dim=256, channel_type="context-based",
                                  max_height=42)  # fmt: skip
        model = cls(config, args, encoder_model, num_labels=ours.config.top_k)
    load_ours(family, model, ours)
    return model


def original_name(family: str, name: str) -> str:
    for pattern, replacement in original_of(family).renames:
        if re.match(pattern, name):
            return re.sub(pattern, replacement, name)
    return name


def load_ours(family: str, original: torch.nn.Module, ours: Any) -> None:
    """Copy every tensor of ours into the original by name; every used tensor of the original must be covered."""
    target = original.state_dict()
    mapped = {original_name(family, k): v for k, v in ours.state_dict().items()}
    missing = [k for k in target if k not in mapped and not k.startswith(original_of(family).unused)]
    extra = [k for k in mapped if k not in target]
    wrong = [k for k in mapped if k in target and mapped[k].shape != target[k].shape]
    if missing or extra or wrong:
        raise SystemExit(f"check_family_equal: weights do not map: missing {missing[:5]}, extra {extra[:5]}, "
                         f"shapes {[(k, tuple(mapped[k].shape), tuple(target[k].shape)) for k in wrong[:5]]}")
    original.load_state_dict(mapped, strict=False)


def head_parameters(model: torch.nn.Module, encoder_prefix: str, unused: tuple[str, ...] = ()) -> tuple[int, int]:
    """(parameters, tensors) outside the encoder, ``unused`` prefixes left out."""
    named = [(n, p) for n, p in model.named_parameters() if not n.startswith((encoder_prefix, *unused))]
    return sum(p.numel() for _, p in named), len(named)


def original_inputs(family: str, batch: dict[str, Any], features: list[dict], with_labels: bool) -> dict[str, Any]:
    """The original's forward arguments for our batch: mention starts before [CLS] (it adds 1), a float mask,
    per-document label lists; KD-DocRE's hts are every n x n cell (self pairs included)."""
    entity_pos = [[[(s - 1, e - 1) for s, e in entity] for entity in f["entity_pos"]] for f in features]
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"].float(),
              "entity_pos": entity_pos}  # fmt: skip
    if family != "kd_docre":
        inputs["hts"] = [f["hts"] for f in features]
        if with_labels:
            inputs["labels"] = [f["labels"] for f in features]
        return inputs
    hts, labels = [], []
    for f in features:
        n = len(f["entity_pos"])
        given = {tuple(p): row for p, row in zip(f["hts"], f["labels"])}
        hts.append([[h, t] for h in range(n) for t in range(n)])
        labels.append([given.get((h, t), [1] + [0] * 96) for h in range(n) for t in range(n)])
    inputs["hts"] = hts
    if with_labels:
        inputs["labels"] = labels
    return inputs


def original_rows(family: str, features: list[dict]) -> torch.Tensor:
    """Row of each of our pairs (hts order) in the original's logits."""
    rows, offset = [], 0
    for f in features:
        n = len(f["entity_pos"])
        if family == "kd_docre":
            rows += [offset + h * n + t for h, t in f["hts"]]
            offset += n * n
        else:
            rows += range(offset, offset + len(f["hts"]))
            offset += len(f["hts"])
    return torch.tensor(rows)


def original_logits(family: str, model: torch.nn.Module, inputs: dict[str, Any]) -> torch.Tensor:
    """The original's logits of every row (DocuNet's forward returns only decoded labels: read its bilinear)."""
    if family != "docunet":
        return model(**inputs)[1]
    captured: dict[str, torch.Tensor] = {}
    handle = model.bilinear.register_forward_hook(lambda module, args, out: captured.setdefault("logits", out))
    try:
        model(**inputs)
    finally:
        handle.remove()
    return captured["logits"]


def original_loss(family: str, model: torch.nn.Module, inputs: dict[str, Any]) -> torch.Tensor:
    out = model(**inputs)
    return out if family == "kd_docre" else out[0]


def negative_mask(features: list[dict], size: int = 42) -> torch.Tensor:
    """KD-DocRE's training loop's mask (drop_prob 0): ones on each document's n x n cells, zeros on the padding."""
    mask = torch.zeros(len(features), size, size)
    for b, f in enumerate(features):
        n = len(f["entity_pos"])
        mask[b, :n, :n] = 1.0
    return mask


def calibrate(ours: Any, batch: dict, share: float = 0.1) -> None:
    """Shift the classifier's biases so that about ``share`` of the pairs get a relation: with untrained heads every
    pair would get top_k relations, and a decoding comparison would hardly test the threshold."""
    classifier = ours.classifier if hasattr(ours, "classifier") else ours.bilinear
    ours.eval()
    with torch.no_grad():
        logits = ours(**{k: batch[k] for k in ("input_ids", "attention_mask", "entity_pos", "hts")}).logits
        shift = torch.quantile(ours.relation_margins(logits).max(1).values.float(), 1 - share)
        if ours.fixed_threshold:
            classifier.bias[1:] -= shift
        else:
            classifier.bias[0] += shift


def best_time(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def compare_batch(family: str, ours: Any, original: torch.nn.Module, batch: dict, features: list[dict]) -> dict:
    """Logits, decoded triples, losses and gradients of one batch."""
    model_inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "entity_pos", "hts")}
    rows = original_rows(family, features)
    ours.eval()
    original.eval()
    with torch.no_grad():
        mine = ours(**model_inputs).logits
        theirs_all = original_logits(family, original, original_inputs(family, batch, features, with_labels=False))
        theirs = theirs_all.reshape(-1, mine.size(-1))[rows]
        decoded_ours = ours.decode(mine)
        decoded_theirs = original.loss_fnt.get_label(theirs_all.reshape(-1, mine.size(-1)), num_labels=original.num_labels)[rows]
        eval_loss_ours = ours(**model_inputs, labels=batch["labels"]).loss
        eval_loss_theirs = original_loss(family, original, original_inputs(family, batch, features, with_labels=True))
    ours.train()
    original.train()
    train_inputs = original_inputs(family, batch, features, with_labels=True)
    if family == "kd_docre":
        train_inputs["negative_mask"] = negative_mask(features)
    with torch.no_grad():
        loss_ours = ours(**model_inputs, labels=batch["labels"]).loss
        loss_theirs = original_loss(family, original, train_inputs)
    return {
        "pairs": int(mine.size(0)),
        "max_abs_logit_diff": float((mine - theirs).abs().max()),
        "triples_ours": int(decoded_ours[:, 1:].sum()),
        "triples_original": int(decoded_theirs[:, 1:].sum()),
        "triples_equal": bool(torch.equal(decoded_ours[:, 1:].bool(), decoded_theirs[:, 1:].bool())),
        "eval_loss": [float(eval_loss_ours), float(eval_loss_theirs)],
        "train_loss": [float(loss_ours), float(loss_theirs)],
    }


def gradient_difference(family: str, ours: Any, original: torch.nn.Module, batch: dict, features: list[dict]) -> float:
    """Relative L2 distance of the head's gradients after the training loss, both models in float64 copies: in
    float32 a max-pooling near-tie or a ReLU at 0 routes a gradient differently on either side, which would hide
    a real difference in noise."""
    ours, original = copy.deepcopy(ours).double().train(), copy.deepcopy(original).double().train()
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "entity_pos", "hts")}
    ours(**inputs, labels=batch["labels"].double()).loss.backward()
    theirs_inputs = original_inputs(family, batch, features, with_labels=True)
    theirs_inputs["attention_mask"] = theirs_inputs["attention_mask"].double()
    if family == "kd_docre":
        theirs_inputs["negative_mask"] = negative_mask(features).double()
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # the originals build their padding tensors in the default dtype
    try:
        original_loss(family, original, theirs_inputs).backward()
    finally:
        torch.set_default_dtype(default)
    theirs = dict(original.named_parameters())
    grads = [(p.grad, theirs[original_name(family, name)].grad) for name, p in ours.named_parameters()
             if not name.startswith("encoder.") and p.grad is not None]  # fmt: skip
    diff = sum(float((a - b).pow(2).sum()) for a, b in grads) ** 0.5
    return diff / max(sum(float(b.pow(2).sum()) for _, b in grads) ** 0.5, 1e-300)


def time_both(family: str, ours: Any, original: torch.nn.Module, batch: dict, features: list[dict], repeats: int) -> dict:
    """Best-of-``repeats`` seconds of a training step and of a prediction forward, ours and the original's."""
    model_inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "entity_pos", "hts")}
    train_inputs = original_inputs(family, batch, features, with_labels=True)
    if family == "kd_docre":
        train_inputs["negative_mask"] = negative_mask(features)
    infer_inputs = original_inputs(family, batch, features, with_labels=False)

    def step_ours() -> None:
        ours.zero_grad()
        ours(**model_inputs, labels=batch["labels"]).loss.backward()

    def step_theirs() -> None:
        original.zero_grad()
        original_loss(family, original, train_inputs).backward()

    ours.train()
    original.train()
    train = {"ours": best_time(step_ours, repeats), "original": best_time(step_theirs, repeats)}
    ours.eval()
    original.eval()
    with torch.no_grad():
        infer = {"ours": best_time(lambda: ours(**model_inputs), repeats),
                 "original": best_time(lambda: original_logits(family, original, infer_inputs), repeats)}  # fmt: skip
    return {"train_step_seconds": train, "predict_seconds": infer,
            "train_speedup": train["original"] / train["ours"], "predict_speedup": infer["original"] / infer["ours"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from envre_hf.models.registry import families

    parser.add_argument("--family", required=True, choices=[f.head_type for f in families() if f.original in ORIGINAL_CODE])
    parser.add_argument("--original", required=True, type=Path, help="your copy of the original repository")
    parser.add_argument("--encoder", default=None, help="encoder folder or id (default: MiniLM-L6, [bench] extra)")
    parser.add_argument("--docs", type=int, default=8, help="Re-DocRED test documents (the first ones)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="timings: best of this many")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if not args.original.is_dir():
        parser.error(f"--original {args.original}: no such folder")
    from transformers import AutoTokenizer

    from envre_hf.documents import read_documents
    from envre_hf.features import DocRECollator, featurize_document
    from envre_hf.models import DocREModel
    from envre_hf.models.registry import get_family

    torch.set_num_threads(max(torch.get_num_threads(), 1))
    encoder = args.encoder or minilm_path()
    cls = import_original(args.family, args.original)
    torch.manual_seed(args.seed)
    ours = DocREModel.from_encoder_pretrained(encoder, head_type=args.family, encoder_kwargs={
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0})  # deterministic train mode on both sides
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    collate = DocRECollator(tokenizer)
    docs = read_documents(TEST)[: args.docs]
    features = [featurize_document(d, tokenizer=tokenizer, max_seq_length=None) for d in docs]
    batches = [features[i : i + args.batch_size] for i in range(0, len(features), args.batch_size)]
    calibrate(ours, collate(batches[0]))
    original = build_original(args.family, cls, ours, encoder)
    results = [compare_batch(args.family, ours, original, collate(b), b) for b in batches]
    # two documents: float64 copies of both models and their pair matrices are the check's peak memory
    grad_diff = gradient_difference(args.family, ours, original, collate(batches[0][:2]), batches[0][:2])
    timing = time_both(args.family, ours, original, collate(batches[0]), batches[0], args.repeats)
    params_ours = head_parameters(ours, "encoder.")
    code = original_of(args.family)
    params_theirs = head_parameters(original, code.encoder_prefix, code.unused)
    loss_diff = max(abs(a - b) for r in results for key in ("eval_loss", "train_loss") for a, b in [r[key]])
    summary = {
        "head_parameters": {"ours": params_ours[0], "original": params_theirs[0]},
        "head_tensors": {"ours": params_ours[1], "original": params_theirs[1]},
        "max_abs_logit_diff": max(r["max_abs_logit_diff"] for r in results),
        "max_abs_loss_diff": loss_diff,
        "head_grad_rel_diff_fp64": grad_diff,
        "triples_equal": all(r["triples_equal"] for r in results),
        "triples": sum(r["triples_ours"] for r in results),
        "pairs": sum(r["pairs"] for r in results),
    }
    passed = (params_ours == params_theirs and summary["max_abs_logit_diff"] <= 1e-4 and loss_diff <= 1e-5
              and summary["triples_equal"] and grad_diff <= 1e-6)  # fmt: skip
    report = {
        "command": "python3 benchmarks/check_family_equal.py " + shlex.join(
            [a if not a.startswith("/") else Path(a).name for a in (argv if argv is not None else sys.argv[1:])]),
        "family": args.family,
        "original": get_family(args.family).original,
        "encoder": Path(encoder).name,
        "documents": len(docs),
        "batch_size": args.batch_size,
        "machine": machine(),
        "passed": passed,
        "summary": summary,
        "timing": timing,
        "batches": results,
    }
    print(f"{args.family} vs {report['original']}: {'PASS' if passed else 'FAIL'}")
    print(f"  head parameters {params_ours[0]:,} / {params_theirs[0]:,} ({params_ours[1]} / {params_theirs[1]} tensors)")
    print(f"  logits max |diff| {summary['max_abs_logit_diff']:.2e} over {summary['pairs']} pairs; "
          f"loss max |diff| {loss_diff:.2e}; head gradients rel diff {grad_diff:.2e} (fp64)")
    print(f"  decoded triples equal: {summary['triples_equal']} ({summary['triples']} triples)")
    print(f"  train step {timing['train_step_seconds']['ours']:.2f} s vs {timing['train_step_seconds']['original']:.2f} s"
          f" ({timing['train_speedup']:.2f}x); predict {timing['predict_seconds']['ours']:.2f} s vs "
          f"{timing['predict_seconds']['original']:.2f} s ({timing['predict_speedup']:.2f}x)")
    if args.json:
        write_json(args.json, report)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
