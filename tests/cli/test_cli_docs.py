"""docs/cli.md runs: every ``bash`` block of the page, line by line, exits 0.

The ``python`` blocks of the page write the files the examples read (run first, in a temporary
directory); a block that calls ``mdsd-ot collect`` gets two tiny random Hugging Face models
(GPT-2 and Llama with one layer of width 8, a WordLevel tokenizer: nothing is downloaded).  Every
command of the app must have an example on the page.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mdsd_ot.cli import app

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
runner = CliRunner()


def blocks(lang: str) -> list[str]:
    """The fenced blocks of the page in ``lang``, in order."""
    return [body for kind, body in FENCE.findall(PAGE.read_text()) if kind == lang]


def commands(block: str) -> list[list[str]]:
    """The ``mdsd-ot`` command lines of a block, as argument lists (comments dropped)."""
    out = []
    for line in block.splitlines():
        args = shlex.split(line, comments=True)
        if args:
            assert args[0] == "mdsd-ot", f"not an mdsd-ot command line: {line!r}"
            out.append(args[1:])
    return out


BASH = blocks("bash")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli-docs")
    old = Path.cwd()
    os.chdir(d)
    try:
        for code in blocks("python"):
            exec(compile(code, str(PAGE), "exec"), {})  # noqa: S102 - the page's own examples
    finally:
        os.chdir(old)
    return d


def _models(root: Path) -> None:
    """A tiny target and draft model with a shared tokenizer, and a prompts file."""
    pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
    )

    lines = ["the cat sat on the mat", "a dog ran in the park and the cat ran too"]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        lines, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"])
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]"
    )
    torch.manual_seed(0)
    V = len(fast)
    target = GPT2LMHeadModel(
        GPT2Config(vocab_size=V, n_embd=8, n_layer=1, n_head=2, n_positions=64)
    )
    draft = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=V, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        )
    )  # fmt: skip
    for model, name in ((target, "target"), (draft, "draft")):
        model.save_pretrained(root / name)
        fast.save_pretrained(root / name)
    (root / "prompts.txt").write_text("the cat\na dog ran in\n")


def test_every_command_has_an_example():
    shown = {args[0] for block in BASH for args in commands(block) if args and args[0][0] != "-"}
    registered = {c.name for c in app.registered_commands}
    assert registered <= shown, f"commands without an example in docs/cli.md: {registered - shown}"


@pytest.mark.parametrize("block", BASH, ids=[" / ".join(a[0] for a in commands(b)) for b in BASH])
def test_bash_block_runs(block, workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cmds = commands(block)
    if any(args[0] == "collect" for args in cmds):
        _models(workdir)
    for args in cmds:
        res = runner.invoke(app, args)
        assert res.exit_code == 0, f"mdsd-ot {shlex.join(args)}:\n{res.output}"
        assert "Traceback" not in res.output
