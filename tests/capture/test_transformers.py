"""Real Hugging Face `transformers` blocks (small configs, random weights, CPU), compiled vs eager.
Skipped when transformers is not installed."""
import pytest
import torch

from fuselens.compiler.capture import explain

from .harness import check

transformers = pytest.importorskip("transformers")
from transformers.models.bert import modeling_bert as bert  # noqa: E402
from transformers.models.gpt2 import modeling_gpt2 as gpt2  # noqa: E402
from transformers.models.llama import modeling_llama as llama  # noqa: E402


def llama_config():
    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    cfg._attn_implementation = "eager"
    return cfg


def hidden(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def rope_inputs():
    pos = torch.arange(7)[None].expand(2, 7)
    return llama.LlamaRotaryEmbedding(llama_config()).eval()(hidden(2, 7, 32), pos)


def blocks():
    torch.manual_seed(0)
    cfg = llama_config()
    pos = torch.arange(7)[None].expand(2, 7)
    h, h2 = hidden(2, 7, 32), hidden(2, 7, 32, seed=1)
    cos_sin = rope_inputs()
    bcfg = transformers.BertConfig(hidden_size=32, num_attention_heads=4, intermediate_size=64)
    bcfg._attn_implementation = "eager"
    g = gpt2.GPT2Block(transformers.GPT2Config(n_embd=32, n_head=4, n_positions=64), layer_idx=0).eval()
    g.attn.config._attn_implementation = "eager"
    return {
        "llama_mlp": (llama.LlamaMLP(cfg).eval(), [((h,), {}), ((h2,), {})]),
        "llama_rmsnorm": (llama.LlamaRMSNorm(32).eval(), [((h,), {})]),
        "llama_rotary_embedding": (llama.LlamaRotaryEmbedding(cfg).eval(), [((h, pos), {})]),
        "llama_attention": (llama.LlamaAttention(cfg, 0).eval(), [((h, cos_sin, None), {}), ((h2, cos_sin, None), {})]),
        "llama_decoder_layer": (llama.LlamaDecoderLayer(cfg, 0).eval(),
                                [((h,), {"position_embeddings": cos_sin, "attention_mask": None})]),
        "gpt2_block": (g, [((h,), {}), ((h2,), {})]),
        "bert_layer": (bert.BertLayer(bcfg).eval(), [((h,), {})]),
    }


BLOCKS = blocks()


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_block_matches_eager_in_one_region(name):
    module, calls = BLOCKS[name]
    check(module, calls, atol=1e-5)
    args, kwargs = calls[0]
    rep = explain(module)(*args, **kwargs)
    assert rep.path == "fuselens" and not rep.breaks and len(rep.regions) == 1
