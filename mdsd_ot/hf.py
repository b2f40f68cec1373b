r"""Collect shards from a pair of Hugging Face causal language models (``pip install 'mdsd-ot[hf]'``).

:func:`collect` generates text with the **target** model and scores the same text with the
**draft** model (teacher forcing), and writes, for every generated position, the two sampling
distributions (after temperature, top-k and top-p, :func:`mdsd_ot.io.warp`)

.. math:: p_t = \mathrm{warp}(\ell^{target}_t), \qquad q_t = \mathrm{warp}(\ell^{draft}_t),

where :math:`\ell_t` are the logits of the next token given the prompt and the tokens generated
so far, and the emitted token is drawn from :math:`p_t`.  Shards follow :mod:`mdsd_ot.io`, one
per batch of prompts, in a new directory that appears only when the whole collection is done.

Models are local directories (``from_pretrained(path, local_files_only=True)``; nothing is
downloaded).  Both must be causal LMs and share one vocabulary: tokenizers that differ are
refused, since p and q must index the same tokens.

transformers and torch are imported on first use.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _validate as V_
from .io import make_metadata, warp, write_shard

__all__ = ["collect", "read_prompts", "check_causal", "check_vocabularies", "context_length"]

_HINT = "pip install 'mdsd-ot[hf]'"


def _require() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(
            f"mdsd_ot.hf needs transformers, tokenizers, safetensors and torch; {_HINT} "
            "(torch: pip install 'mdsd-ot[torch]')"
        ) from exc
    return torch, transformers


def read_prompts(path: str | os.PathLike) -> list[str]:
    """Prompts from a file: one per non-blank line, or ``.jsonl`` lines ``{"prompt": ...}``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "p.txt"
    >>> _ = f.write_text("Hello\\n\\nThe cat\\n")
    >>> read_prompts(f)
    ['Hello', 'The cat']
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--prompts: file {path} does not exist")
    lines = [s for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
    if path.suffix == ".jsonl":
        out = []
        for k, s in enumerate(lines, 1):
            try:
                obj = json.loads(s)
            except json.JSONDecodeError:
                raise ValueError(f"--prompts: {path} line {k} is not JSON") from None
            text = obj.get("prompt") if isinstance(obj, dict) else obj
            if not isinstance(text, str):
                raise ValueError(f'--prompts: {path} line {k}: expected {{"prompt": "..."}}')
            out.append(text)
        lines = out
    if not lines:
        raise ValueError(
            f"--prompts: {path} holds no prompts (the file is empty); write one prompt per line"
        )
    return lines


def check_causal(path: str | os.PathLike, role: str) -> Any:
    """The config of the model directory ``path``; refuses models that are not causal LMs."""
    _, transformers = _require()
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    path = Path(path)
    if not path.is_dir():
        raise ValueError(
            f"--{role}: {path} is not a directory; give a local model directory saved with "
            "save_pretrained (nothing is downloaded)"
        )
    if not (path / "config.json").is_file():
        raise ValueError(
            f"--{role}: {path} has no config.json; save the model with save_pretrained"
        )
    config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
    if config.model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise ValueError(
            f"--{role}: {path} holds a {config.model_type!r} model ({type(config).__name__}), "
            "which is not a causal language model; give a decoder-only model that "
            "AutoModelForCausalLM loads (e.g. GPT-2, Llama, Qwen2)"
        )
    return config


def check_vocabularies(target_tok: Any, draft_tok: Any, target: str, draft: str) -> None:
    """Refuse a pair whose tokenizers map tokens to ids differently."""
    a, b = target_tok.get_vocab(), draft_tok.get_vocab()
    if a == b:
        return
    diff = sorted(set(a.items()) ^ set(b.items()))
    tok = diff[0][0]
    raise ValueError(
        f"--draft: the tokenizer of {draft} ({len(b)} tokens) differs from that of {target} "
        f"({len(a)} tokens), e.g. {tok!r} is id {a.get(tok)} vs {b.get(tok)}; p and q must be "
        "over the same tokens: pick a draft of the target's family (same tokenizer), or save "
        "the target's tokenizer with the draft only if the draft was trained with it"
    )


def _load(path: Path, device: str) -> tuple[Any, Any]:
    """Tokenizer and model (eval mode) of a local directory, without transformers' own bars."""
    _, transformers = _require()
    tlog = transformers.utils.logging
    bars, level = tlog.is_progress_bar_enabled(), tlog.get_verbosity()
    tlog.disable_progress_bar()
    tlog.set_verbosity_error()
    try:
        tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    finally:
        tlog.set_verbosity(level)
        if bars:
            tlog.enable_progress_bar()
    return tok, model.to(device).eval()


def _vocab_size(model: Any) -> int:
    return int(model.get_output_embeddings().weight.shape[0])


def _cache_name(model: Any) -> str:
    """The keyword of the key/value cache (``cache`` in recent transformers)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _sample(P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One token per row of P (inverse CDF)."""
    cdf = np.cumsum(P, axis=1)
    u = rng.random(P.shape[0]) * cdf[:, -1]
    return np.argmax(cdf > u[:, None], axis=1)


def _check_settings(max_new_tokens, temperature, top_k, top_p, batch_size) -> None:
    for name, val, ok, rule in (
        ("max_new_tokens", max_new_tokens, lambda x: int(x) >= 1, "an integer >= 1"),
        ("temperature", temperature, lambda x: np.isfinite(x) and x > 0, "a number > 0"),
        ("top_k", top_k, lambda x: int(x) >= 0, "an integer >= 0 (0 = off)"),
        ("top_p", top_p, lambda x: 0 < x <= 1, "a number in (0, 1]"),
        ("batch_size", batch_size, lambda x: int(x) >= 1, "an integer >= 1"),
    ):
        if isinstance(val, bool) or not ok(val):
            raise ValueError(f"--{name.replace('_', '-')}: must be {rule}, got {val!r}")


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out: {out} exists and is not an empty directory; choose a new path")
    if not out.parent.is_dir():
        raise ValueError(f"--out: directory {out.parent} does not exist; create it first")


def context_length(model: Any) -> int | None:
    """The longest sequence the model's config declares (``max_position_embeddings``, or GPT-2's
    ``n_positions``); None when it declares none."""
    cfg = getattr(model, "config", None)
    for key in ("max_position_embeddings", "n_positions", "n_ctx"):
        v = getattr(cfg, key, None)
        if isinstance(v, int) and v > 0:
            return v
    return None


def _check_context(ids: list[list[int]], max_new_tokens: int, models: Any) -> None:
    """Refuse, before any forward pass, a prompt that with ``max_new_tokens`` tokens would run
    past a model's context (its position embeddings would be indexed out of range)."""
    k = max(range(len(ids)), key=lambda i: len(ids[i]))
    need = len(ids[k]) + max_new_tokens - 1  # the last new token is never fed back
    for path, model in models:
        limit = context_length(model)
        if limit is not None and need > limit:
            raise ValueError(
                f"--max-new-tokens: prompt {k + 1} has {len(ids[k])} tokens, and {max_new_tokens} "
                f"new ones need {need} positions (the last is not fed back), beyond the {limit} "
                f"of {path}; lower --max-new-tokens to at most {limit - len(ids[k]) + 1} or "
                "shorten the prompt"
            )


def collect(
    target: str | os.PathLike,
    draft: str | os.PathLike,
    prompts: Sequence[str],
    *,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int = 0,
    out: str | os.PathLike,
    batch_size: int = 8,
    device: str = "cpu",
    dtype: str = "float32",
    store_logits: bool = False,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Generate with ``target``, score with ``draft``, write p and q of every generated position.

    Parameters
    ----------
    target, draft : path
        Local model directories (model and tokenizer saved with ``save_pretrained``).
    prompts : sequence of str
        The prompts (see :func:`read_prompts` for files).
    max_new_tokens : int
        Tokens generated per prompt (fewer when the target emits its end-of-sequence token).
    temperature, top_k, top_p : float, int, float
        The sampling settings of both models (``top_k = 0`` and ``top_p = 1`` are off).
    seed : int
        Seed of the target's sampling.
    out : path
        New directory of shards (must not exist, or be empty).
    batch_size : int
        Prompts per forward pass (one shard per batch).
    device : str
        torch device of the models, e.g. ``"cpu"`` or ``"cuda"``.
    dtype : {"float32", "float64"}
        Storage type of p and q.
    store_logits : bool
        Also store the raw logits (``logits_p``/``logits_q``, float32) so reports may re-temper.
    progress : callable, optional
        Called with the number of positions generated at each step.

    Returns
    -------
    dict
        ``{"out", "shards", "positions", "V", "seconds", "tokens_per_second", "target", "draft",
        "temperature", "top_k", "top_p", "seed"}``.
    """
    _check_settings(max_new_tokens, temperature, top_k, top_p, batch_size)
    if dtype not in ("float32", "float64"):
        raise ValueError(f"--dtype: float32 or float64, got {dtype!r}")
    prompts = list(prompts)
    if not prompts or not all(isinstance(s, str) for s in prompts):
        raise ValueError("prompts: give at least one prompt (a list of strings)")
    out = Path(out)
    _check_out(out)
    tpath, dpath = Path(target), Path(draft)
    check_causal(tpath, "target")
    check_causal(dpath, "draft")
    torch, _ = _require()
    V_.check_torch_device(device, torch, "device")
    ttok, tmodel = _load(tpath, device)
    dtok, dmodel = _load(dpath, device)
    check_vocabularies(ttok, dtok, str(tpath), str(dpath))
    V = _vocab_size(tmodel)
    if _vocab_size(dmodel) != V:
        raise ValueError(
            f"--draft: {dpath} has {_vocab_size(dmodel)} output logits but {tpath} has {V}; "
            "resize the draft's output layer (model.resize_token_embeddings) to the target's"
        )
    ids = [ttok(s, add_special_tokens=True)["input_ids"] for s in prompts]
    for k, x in enumerate(ids):
        if not x:
            raise ValueError(f"prompts: prompt {k + 1} is empty after tokenization")
    _check_context(ids, int(max_new_tokens), ((tpath, tmodel), (dpath, dmodel)))
    meta = make_metadata(
        str(tpath), str(dpath), temperature=temperature, top_k=top_k, top_p=top_p, vocab_size=V
    )
    eos = ttok.eos_token_id
    eos = set(eos if isinstance(eos, list) else [] if eos is None else [eos])
    rng = np.random.default_rng(seed)
    settings = (float(temperature), int(top_k), float(top_p))
    tmp = out.parent / f".{out.name}.partial-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    t0, total, shards = time.perf_counter(), 0, 0
    try:
        with torch.inference_mode():
            for b in range(0, len(ids), int(batch_size)):
                rows = _batch(
                    torch, tmodel, dmodel, ids[b : b + int(batch_size)], b, int(max_new_tokens),
                    settings, eos, rng, device, store_logits, progress,
                )  # fmt: skip
                if rows["p"].shape[0] == 0:  # pragma: no cover - every prompt yields a token
                    continue
                rows["p"], rows["q"] = rows["p"].astype(dtype), rows["q"].astype(dtype)
                write_shard(tmp / f"shard-{shards:05d}.safetensors", metadata=meta, **rows)
                shards += 1
                total += rows["p"].shape[0]
        if out.exists():
            out.rmdir()
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    seconds = time.perf_counter() - t0
    return {
        "out": str(out),
        "shards": shards,
        "positions": total,
        "V": V,
        "seconds": seconds,
        "tokens_per_second": total / seconds if seconds > 0 else None,
        "target": str(tpath),
        "draft": str(dpath),
        "temperature": float(temperature),
        "top_k": int(top_k),
        "top_p": float(top_p),
        "seed": int(seed),
    }


def _left_pad(torch: Any, seqs: list[list[int]], device: str) -> tuple[Any, Any, Any]:
    L = max(len(s) for s in seqs)
    ids = torch.zeros((len(seqs), L), dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for k, s in enumerate(seqs):
        ids[k, L - len(s) :] = torch.tensor(s, dtype=torch.long)
        mask[k, L - len(s) :] = 1
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), pos.to(device)


def _batch(
    torch, tmodel, dmodel, prompts, first, steps, settings, eos, rng, device, logits, progress
):
    """Generate ``steps`` tokens for a batch of prompts; p and q of every recorded position."""
    T, top_k, top_p = settings
    B = len(prompts)
    ids, mask, pos = _left_pad(torch, prompts, device)
    cache = _cache_name(tmodel)
    out = tmodel(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True)
    active = np.ones(B, dtype=bool)
    rec: list[tuple[int, int, int, np.ndarray, np.ndarray]] = []  # (row, step, token, p, logits)
    gen = []
    for s in range(steps):
        raw = out.logits[:, -1, :].double().cpu().numpy()
        P = warp(raw, T, top_k, top_p)
        tok = _sample(P, rng)
        for r in np.flatnonzero(active):
            rec.append((int(r), s, int(tok[r]), P[r], raw[r]))
        if progress is not None:
            progress(int(active.sum()))
        active &= ~np.isin(tok, list(eos))
        gen.append(tok)
        if not active.any() or s == steps - 1:
            break
        nxt = torch.tensor(tok, dtype=torch.long, device=device)[:, None]
        mask = torch.cat([mask, torch.ones((B, 1), dtype=mask.dtype, device=device)], dim=1)
        pos = pos[:, -1:] + 1
        out = tmodel(
            input_ids=nxt, attention_mask=mask, position_ids=pos, use_cache=True,
            **{cache: out[cache]},
        )  # fmt: skip
    S = len(gen)
    full = torch.cat([ids, torch.tensor(np.stack(gen, 1), dtype=torch.long, device=device)], 1)
    fmask = torch.cat([mask[:, : ids.shape[1]], torch.ones_like(full[:, ids.shape[1] :])], 1)
    fpos = (fmask.cumsum(-1) - 1).clamp(min=0)
    dl = dmodel(
        input_ids=full[:, :-1], attention_mask=fmask[:, :-1], position_ids=fpos[:, :-1],
        logits_to_keep=S,
    ).logits  # fmt: skip
    draft_raw = dl.double().cpu().numpy()  # (B, S, V): step s predicts generated token s
    rec.sort(key=lambda x: (x[0], x[1]))
    lengths = [len(p) for p in prompts]
    rows = {
        "p": np.stack([x[3] for x in rec]),
        "q": warp(np.stack([draft_raw[x[0], x[1]] for x in rec]), T, top_k, top_p),
        "token": np.array([x[2] for x in rec], dtype=np.int64),
        "position": np.array([lengths[x[0]] + x[1] for x in rec], dtype=np.int64),
        "sequence": np.array([first + x[0] for x in rec], dtype=np.int64),
    }
    if logits:
        rows["logits_p"] = np.stack([x[4] for x in rec]).astype(np.float32)
        rows["logits_q"] = np.stack([draft_raw[x[0], x[1]] for x in rec]).astype(np.float32)
    return rows
