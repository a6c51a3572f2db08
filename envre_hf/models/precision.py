"""Which float precision inference runs in: bf16 only where the hardware computes it natively.

On a CPU without AVX512-BF16 or AMX, torch emulates bf16 (an AVX2 EPYC ran ``nn.Linear`` ten times slower
under bf16 autocast than in fp32), so asking for bf16 there is a slowdown, never a speed-up. Every
inference path (:func:`~envre_hf.models.prediction.iter_logits`: ``envre evaluate`` / ``predict`` / ``probe``
and the pipeline) resolves its ``autocast`` here, by torch's own capability checks.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import torch

#: ``autocast`` values (besides None = fp32): what each asks for. ``"bf16-force"``: bf16 even where emulated.
PRECISIONS = ("fp32", "auto", "bf16", "bf16-force", "fp16")
#: torch dtype of each autocast that runs.
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}

_logger = logging.getLogger(__name__)
_warned: set[str] = set()
_WHY = {"cpu": "no AVX512-BF16, no AMX", "cuda": "torch.cuda.is_bf16_supported() is False"}
#: oneDNN ISA caps (``ONEDNN_MAX_CPU_ISA``, formerly ``DNNL_MAX_CPU_ISA``) under which its bf16 kernels are emulated:
#: a capped process computes bf16 as slowly as a CPU without it, whatever the CPU reports.
_NO_BF16_ISA = {"SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE", "AVX512_CORE_VNNI"}


def native_bf16(device: Any = "cpu") -> bool:
    """Whether ``device`` computes bf16 natively: a CUDA GPU that supports it, or a CPU with AVX512-BF16 or AMX
    (torch's own checks, ``torch.cpu._is_avx512_bf16_supported`` / ``_is_amx_tile_supported``), unless oneDNN's
    ISA is capped below bf16 (:data:`_NO_BF16_ISA`)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA") or ""
    if cap.strip().upper() in _NO_BF16_ISA:
        return False
    checks = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(bool(check()) for check in checks if check is not None)


def resolve_autocast(precision: str | None, device: Any = "cpu") -> str | None:
    """The autocast (``"bf16"``, ``"fp16"`` or None: fp32) that ``precision`` (see :data:`PRECISIONS`) runs on ``device``.

    ``"auto"`` is bf16 where :func:`native_bf16`, else fp32, silently; ``"bf16"`` on a device without native bf16
    logs one warning line (once per device and process) and runs fp32; ``"bf16-force"`` runs bf16 regardless.
    """
    if precision is None or precision == "fp32":
        return None
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)} or None, got {precision!r}")
    if precision == "fp16":
        return "fp16"
    if precision == "bf16-force" or native_bf16(device):
        return "bf16"
    if precision == "bf16":
        where = str(torch.device(device))
        if where not in _warned:
            _warned.add(where)
            _logger.warning(
                "bf16 requested, but %s has no native bf16 (%s): running fp32, faster here (insist: --precision bf16-force, "
                "autocast='bf16-force')", where, _WHY.get(torch.device(device).type, "not a CPU or CUDA device"),
            )
    return None


def fit_weights(model: torch.nn.Module, precision: str | None = None) -> torch.nn.Module:
    """``model``, cast to fp32 in place (with :func:`resolve_autocast`'s warning) when its weights are bf16 (e.g.
    loaded with ``dtype=torch.bfloat16``) on a device without native bf16, unless ``precision`` is ``"bf16-force"``."""
    weight = next(model.parameters(), None)
    if weight is None or weight.dtype != torch.bfloat16 or precision == "bf16-force":
        return model
    if resolve_autocast("bf16", weight.device) is None:
        model.float()
    return model
