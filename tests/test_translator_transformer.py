"""nn.MultiheadAttention and nn.TransformerEncoder(Layer) are traced through as the ops they compute: the
projections and batched products stay in ATen, the rest fuses into HIP, and the forward refers to the
modules' own sizes (self.attn.num_heads), so the kernel translated at one size is correct at another.
One compiled model on the cpu backend."""

from __future__ import annotations

import pytest

from hipforge.execution.config import EvalConfig
from hipforge.execution.evaluate import evaluate
from hipforge.translate import generate
from hipforge.translate.errors import Untranslatable
from tests.test_translator_ops import HEADER

TRANSFORMER = HEADER + """class Model(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed, heads, batch_first=True)
        layer = nn.TransformerEncoderLayer(embed, heads, 2 * embed, dropout=0.0, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(embed), enable_nested_tensor=False)
        self.prenorm = nn.TransformerEncoderLayer(embed, heads, embed, dropout=0.0, norm_first=True)

    def forward(self, x):
        out, weights = self.attn(x, x, x)
        y = self.encoder(out.transpose(0, 1)).transpose(0, 1) + weights.sum(-1, keepdim=True)
        return self.prenorm(y) * torch.sigmoid(y)


batch, length, embed, heads = {sizes}


def get_inputs():
    return [torch.randn(batch, length, embed)]


def get_init_inputs():
    return [embed, heads]
"""


def test_attention_and_encoder_layers_translate_and_are_correct_at_another_size():
    generated = generate(TRANSFORMER.format(sizes="2, 12, 32, 4"))
    forward = generated.source.split("def forward")[1]
    assert "self.attn.in_proj_weight" in forward and "self.encoder.layers[1].self_attn.out_proj.weight" in forward
    assert "// self.attn.num_heads" in forward and "torch.bmm(" in forward and "hip_ext." in forward
    assert "self.attn(" not in forward and "self.encoder(" not in forward  # traced through, not called whole
    config = EvalConfig(backend="cpu", timed_trials=1, gate=False, time_compiled_ref=False)
    result = evaluate(generated.source, TRANSFORMER.format(sizes="3, 7, 24, 3"), config)
    assert result.verdict.value == "correct", (result.message[:600], result.compile_log[-1500:])


@pytest.mark.parametrize(("init", "call", "reason"), [
    ("nn.MultiheadAttention(8, 2)", "self.m(x, x, x, attn_mask=torch.ones(4, 4).bool())[0]", "unmasked self-attention"),
    ("nn.MultiheadAttention(8, 2)", "self.m(x, x.flip(0), x)[0]", "unmasked self-attention"),
    ("nn.MultiheadAttention(8, 2, dropout=0.1)", "self.m(x, x, x)[0]", "training dropout"),
    ("nn.TransformerEncoderLayer(8, 2, 16)", "self.m(x)", "training dropout"),  # its attention drops out too
])
def test_what_the_attention_math_does_not_cover_is_declined(init: str, call: str, reason: str):
    source = HEADER + (f"class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                       f"        self.m = {init}\n\n    def forward(self, x):\n        return {call}\n\n\n"
                       "def get_inputs():\n    return [torch.randn(4, 2, 8)]\n\n\n"
                       "def get_init_inputs():\n    return []\n")
    with pytest.raises(Untranslatable, match=reason):
        generate(source)
