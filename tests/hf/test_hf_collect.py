"""The Hugging Face collector, offline: tiny causal LMs built from configs, a local tokenizer.

The target is a GPT-2 and the draft a Llama (random weights, one layer of width 8: a few hundred
parameters per layer), both saved with a WordLevel tokenizer trained on a few lines.  Nothing is
downloaded (HF_HUB_OFFLINE=1, and the collector passes local_files_only=True).
"""

from __future__ import annotations

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np  # noqa: E402
import pytest  # noqa: E402

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from mdsd_ot import hf  # noqa: E402
from mdsd_ot.cli import app  # noqa: E402
from mdsd_ot.io import read_shards, warp  # noqa: E402
from mdsd_ot.reports import report  # noqa: E402

LINES = [
    "the cat sat on the mat",
    "a dog ran in the park and the cat ran too",
    "speculative decoding drafts tokens with a small model",
    "the target model verifies the drafts in one pass",
]
PROMPTS = ["the cat", "a dog ran in", "speculative decoding drafts tokens with"]


def _tokenizer(lines):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        lines, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"])
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]"
    )


def _save_pair(root, tok_target, tok_draft):
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    V = len(tok_target)
    t = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_embd=8, n_layer=1, n_head=2, n_positions=64))
    d = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok_draft), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
        )
    )  # fmt: skip
    for model, tok, name in ((t, tok_target, "target"), (d, tok_draft, "draft")):
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
    return root / "target", root / "draft"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    tok = _tokenizer(LINES)
    return _save_pair(root, tok, tok)


@pytest.fixture(scope="module")
def collected(pair, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "shards"
    calls = []
    summary = hf.collect(
        *pair, PROMPTS, max_new_tokens=5, temperature=1.0, top_k=0, top_p=1.0, seed=3, out=out,
        batch_size=2, store_logits=True, progress=calls.append,
    )  # fmt: skip
    return out, summary, calls


def _forward(path, ids):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True).eval()
    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids])).logits[0].double().numpy()


def test_collect_writes_p_and_q_of_every_generated_position(pair, collected):
    out, summary, calls = collected
    shards = list(read_shards(out))
    assert summary["shards"] == len(shards) == 2  # batches of 2 prompts
    assert summary["positions"] == sum(s.m for s in shards) == sum(calls)
    tok = hf._load(pair[0], "cpu")[0]
    eos = tok.eos_token_id
    seen = 0
    for s in shards:
        assert s.metadata["target"] == str(pair[0]) and s.metadata["created_by"].startswith(
            "mdsd-ot"
        )
        r = s.rows()
        for seq in np.unique(r["sequence"]):
            k = np.flatnonzero(r["sequence"] == seq)
            prompt = tok(PROMPTS[seq])["input_ids"]
            assert r["position"][k].tolist() == list(range(len(prompt), len(prompt) + len(k)))
            assert len(k) == 5 or r["token"][k[-1]] == eos  # stops early only at end-of-sequence
            ids = prompt + r["token"][k].tolist()
            lt = _forward(pair[0], ids)  # teacher-forced target, unpadded, no cache
            ld = _forward(pair[1], ids)
            for j, row in enumerate(k):
                at = len(prompt) + j - 1
                # float32 storage of p and q; logits agree with the padded, cached run to ~1e-6
                assert np.allclose(r["p"][row], warp(lt[at], 1.0), atol=1e-5, rtol=0)
                assert np.allclose(r["q"][row], warp(ld[at], 1.0), atol=1e-5, rtol=0)
                assert np.allclose(r["logits_q"][row], ld[at], atol=1e-4, rtol=0)
                assert r["p"][row][r["token"][row]] > 0
            seen += len(k)
    assert seen == summary["positions"]


def test_collect_is_seeded_and_applies_top_k(pair, tmp_path):
    kw = dict(max_new_tokens=3, temperature=0.7, top_k=3, top_p=1.0, seed=1, batch_size=3)
    a = hf.collect(*pair, PROMPTS, out=tmp_path / "a", **kw)
    b = hf.collect(*pair, PROMPTS, out=tmp_path / "b", **kw)
    assert a["positions"] == b["positions"]
    (sa,), (sb,) = list(read_shards(tmp_path / "a")), list(read_shards(tmp_path / "b"))
    ra, rb = sa.rows(), sb.rows()
    assert np.array_equal(ra["token"], rb["token"]) and np.array_equal(ra["p"], rb["p"])
    assert (np.count_nonzero(ra["p"], axis=1) <= 3).all()
    assert (np.count_nonzero(ra["q"], axis=1) <= 3).all()
    assert (sa.temperature, sa.top_k) == (0.7, 3)
    assert set(sa.keys) == {"p", "q", "token", "position", "sequence"}  # no logits by default


def test_collect_then_report_end_to_end(collected):
    out, summary, _ = collected
    rep = report(out, [2, 3], samples=200)
    assert rep["positions"] == summary["positions"] and rep["V"] == summary["V"]
    assert {r["law"] for r in rep["results"]} >= {"with", "without", "greedy"}
    for r in rep["results"]:
        for v in r["verifiers"]:
            if v["method"] in ("closed-form", "exact") and v["gap"] is not None:
                assert v["gap"]["mean"] >= -1e-12  # T11
    retempered = report(out, [2], temperatures=[0.5, 2.0], laws=["with"], samples=200)
    assert retempered["retempered"] and retempered["temperatures"] == [0.5, 2.0]


def test_cli_collect_and_report(pair, tmp_path):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n".join(PROMPTS[:2]) + "\n\n")
    runner = CliRunner()
    r = runner.invoke(
        app,
        ["collect", "--target", str(pair[0]), "--draft", str(pair[1]), "--prompts", str(prompts),
         "--out", str(tmp_path / "out"), "--max-new-tokens", "3", "--json"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["shards"] == 1 and 2 <= summary["positions"] <= 6
    r = runner.invoke(app, ["report", str(tmp_path / "out"), "-n", "2", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["positions"] == summary["positions"]


def test_warp_matches_hugging_face_warpers():
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    g = np.random.default_rng(0)
    z = g.standard_normal((4, 50)) * 3
    for T, k, p in ((0.7, 0, 1.0), (1.3, 10, 1.0), (1.0, 0, 0.8), (0.5, 20, 0.9)):
        x = torch.tensor(z)
        x = TemperatureLogitsWarper(T)(None, x)
        if k:
            x = TopKLogitsWarper(k)(None, x)
        if p < 1:
            x = TopPLogitsWarper(p)(None, x)
        ref = torch.softmax(x, dim=-1).numpy()
        assert np.allclose(warp(z, T, k, p), ref, atol=1e-12, rtol=0), (T, k, p)


# -- bad input ---------------------------------------------------------------------------------


def test_refuses_models_that_are_not_causal_lms(pair, tmp_path):
    from transformers import DistilBertConfig

    DistilBertConfig(vocab_size=20, dim=8, n_layers=1, n_heads=2, hidden_dim=16).save_pretrained(
        tmp_path / "bert"
    )
    with pytest.raises(ValueError, match="'distilbert' model .* not a causal language model"):
        hf.collect(pair[0], tmp_path / "bert", PROMPTS, out=tmp_path / "o")
    with pytest.raises(ValueError, match="is not a directory"):
        hf.collect(tmp_path / "missing", pair[1], PROMPTS, out=tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_refuses_tokenizers_whose_vocabularies_differ(tmp_path):
    target, draft = _save_pair(tmp_path, _tokenizer(LINES), _tokenizer(LINES[:2]))
    with pytest.raises(ValueError, match=r"differs from that of .* \(same tokenizer\)") as err:
        hf.collect(target, draft, PROMPTS, out=tmp_path / "o", max_new_tokens=2)
    assert "\n" not in str(err.value) and not (tmp_path / "o").exists()


def test_cli_bad_input_exits_2(pair, tmp_path):
    runner = CliRunner()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    base = ["collect", "--target", str(pair[0]), "--draft", str(pair[1]), "--out"]
    r = runner.invoke(app, [*base, str(tmp_path / "o"), "--prompts", str(empty)])
    assert r.exit_code == 2 and "holds no prompts" in r.output
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("")
    prompts = tmp_path / "p.txt"
    prompts.write_text("the cat\n")
    r = runner.invoke(app, [*base, str(full), "--prompts", str(prompts)])
    assert r.exit_code == 2 and "not an empty directory" in r.output
    r = runner.invoke(app, [*base, str(tmp_path / "o"), "--prompts", str(prompts), "--top-p", "0"])
    assert r.exit_code == 2 and "--top-p" in r.output
    assert not (tmp_path / "o").exists()


def test_a_run_past_the_context_is_refused_before_any_pass(pair, tmp_path):
    """Both tiny models hold 64 positions: a prompt of 5 tokens with 80 new ones would index
    the position embeddings out of range (an IndexError, exit 3, in the middle of the run).
    The last new token is never fed back: 60 new ones fit (64 positions), 61 do not."""
    assert hf.context_length(torch.nn.Module()) is None  # no config: no limit known
    with pytest.raises(ValueError, match=r"^--max-new-tokens: prompt 3 has 5 tokens, and 80 new "
                       r"ones need 84 positions .* beyond the 64 of .*target; lower "
                       r"--max-new-tokens to at most 60"):  # fmt: skip
        hf.collect(*pair, PROMPTS, out=tmp_path / "o", max_new_tokens=80)
    with pytest.raises(ValueError, match=r"at most 60"):
        hf.collect(*pair, PROMPTS, out=tmp_path / "o", max_new_tokens=61)
    assert not (tmp_path / "o").exists()
    summary = hf.collect(*pair, PROMPTS, out=tmp_path / "fits", max_new_tokens=60, seed=1)
    assert summary["positions"] > 0  # the longest run allowed goes through
    prompts = tmp_path / "p.txt"
    prompts.write_text("\n".join(PROMPTS) + "\n")
    r = CliRunner().invoke(app, ["collect", "--target", str(pair[0]), "--draft", str(pair[1]),
                                 "--out", str(tmp_path / "o"), "--prompts", str(prompts),
                                 "--max-new-tokens", "80"])  # fmt: skip
    assert r.exit_code == 2 and "--max-new-tokens: prompt 3" in r.output, r.output
    r = CliRunner().invoke(app, ["collect", "--target", str(pair[0]), "--draft", str(pair[1]),
                                 "--out", str(tmp_path / "o"), "--prompts", str(prompts),
                                 "--device", "cuda:7"])  # fmt: skip
    assert r.exit_code == 2 and "--device" in r.output, r.output
