r"""``mdsd-ot collect``: shards of p and q from a target and a draft model (Hugging Face).

.. code-block:: text

   mdsd-ot collect --target PATH --draft PATH --prompts FILE --out DIR
                   [--max-new-tokens 64] [--temperature 1] [--top-k 0] [--top-p 1]
                   [--seed 0] [--batch-size 8] [--device cpu] [--dtype float32] [--logits]
                   [--json]

Generates with the target, scores the same text with the draft (teacher forcing) and writes p
and q of every generated position (:func:`mdsd_ot.hf.collect`; format: ``docs/shards.md``).
FILE holds one prompt per line (or ``.jsonl`` lines ``{"prompt": ...}``).  A progress bar
(positions, tokens/s) shows on a terminal; ``--json`` prints only the summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ._bounds import MAX_BATCH, MAX_TOKENS, check_float, check_int, check_seed
from ._common import JsonOption, SeedOption, cli_command, option_names
from ._files import check_input_file, check_output_dir
from .report import progress_bar

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``collect`` command to ``app``."""

    @app.command("collect")
    @cli_command
    def collect_cmd(
        target: Annotated[
            str, typer.Option("--target", metavar="PATH", help="Target model directory.")
        ],
        draft: Annotated[
            str, typer.Option("--draft", metavar="PATH", help="Draft model directory.")
        ],
        prompts: Annotated[
            str,
            typer.Option("--prompts", metavar="FILE", help="Prompts: one per line (or .jsonl)."),
        ],
        out: Annotated[
            str, typer.Option("--out", metavar="DIR", help="New directory for the shards.")
        ],
        max_new_tokens: Annotated[
            int, typer.Option("--max-new-tokens", help="Tokens generated per prompt.")
        ] = 64,
        temperature: Annotated[float, typer.Option("--temperature", help="Temperature.")] = 1.0,
        top_k: Annotated[int, typer.Option("--top-k", help="Top-k (0 = off).")] = 0,
        top_p: Annotated[float, typer.Option("--top-p", help="Top-p (1 = off).")] = 1.0,
        seed: SeedOption = 0,
        batch_size: Annotated[int, typer.Option("--batch-size", help="Prompts per batch.")] = 8,
        device: Annotated[str, typer.Option("--device", help="torch device.")] = "cpu",
        dtype: Annotated[
            str, typer.Option("--dtype", help="Storage of p and q: float32 or float64.")
        ] = "float32",
        logits: Annotated[
            bool, typer.Option("--logits", help="Also store raw logits (re-tempering).")
        ] = False,
        as_json: JsonOption = False,
    ) -> None:
        """Generate with the target, score with the draft, write p and q of every position."""
        from ..hf import collect, read_prompts

        check_int(max_new_tokens, "--max-new-tokens", 1, MAX_TOKENS)
        check_float(temperature, "--temperature", lo=0.0, lo_open=True)
        check_int(top_k, "--top-k", 0)
        check_float(top_p, "--top-p", lo=0.0, hi=1.0, lo_open=True)
        check_int(batch_size, "--batch-size", 1, MAX_BATCH)
        check_seed(seed)
        if dtype not in ("float32", "float64"):
            raise ValueError(f"--dtype: must be float32 or float64, got {dtype!r}")
        check_output_dir(out, "--out")
        check_input_file(Path(prompts), "--prompts")
        texts = read_prompts(prompts)
        with (
            option_names(device="--device", prompts="--prompts"),
            progress_bar(len(texts) * max(max_new_tokens, 0), as_json, unit="tokens") as adv,
        ):
            summary = collect(
                target, draft, texts, max_new_tokens=max_new_tokens, temperature=temperature,
                top_k=top_k, top_p=top_p, seed=seed, out=out, batch_size=batch_size,
                device=device, dtype=dtype, store_logits=logits, progress=adv,
            )  # fmt: skip
        if as_json:
            typer.echo(json.dumps(summary, indent=2))
        else:
            typer.echo(
                f"wrote {summary['positions']} positions (V = {summary['V']}) in "
                f"{summary['shards']} shard(s) to {summary['out']} "
                f"({summary['tokens_per_second']:.1f} tokens/s)"
            )
