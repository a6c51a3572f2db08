#!/usr/bin/env python3
"""Train a DocRE model with or without EVRT (entity-variation robust training).

    python examples/run_docre.py --model_name_or_path bert-base-cased --train_file train.json \
        --dev_file dev.json --dev_renamed_file dev_renamed.json --output_dir out --evrt \
        --eval_strategy epoch --save_strategy epoch --load_best_model_at_end

    accelerate launch --config_file examples/accelerate_configs/multi_gpu.yaml examples/run_docre.py ...

Arguments: ModelArguments, DataArguments (see ``envre_hf.training.run``) and EVRTTrainingArguments
(every transformers TrainingArguments option plus --evrt, --evrt_alpha, --evrt_beta, --evrt_losses,
--twin_source, --twin_file, --rename_kb_pool, --exclude_names_from, --rename_seed). A single .json
or .yaml file holding the same keys works too. ``envre train`` runs this same ``main``.
"""

from __future__ import annotations

import sys

from envre_hf.training.run import DataArguments, ModelArguments, main, parse_args, run

__all__ = ["DataArguments", "ModelArguments", "main", "parse_args", "run"]

if __name__ == "__main__":
    main(sys.argv[1:])
    sys.exit(0)
