"""nn.MultiheadAttention, nn.TransformerEncoderLayer and nn.TransformerEncoder, traced through as the ops
they compute instead of as opaque calls: their PyTorch forwards branch on tensor properties (fast paths,
masks) that fx cannot trace. The projections and the batched products then stay in ATen while the
scaling, softmax, residual adds, norms and activations around them fuse into HIP like any other model's.

The math is F.multi_head_attention_forward's for unmasked self-attention, with q @ k^T scaled by
head_dim ** -0.5 and the attention weights averaged over heads when asked for. What is not that
(cross-attention, masks, dropout in training mode, bias_k/v, zero attention) is declined by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hipforge.translate.errors import Untranslatable


def decompositions(model: Any) -> dict[int, Callable[..., Any]]:
    """id(module) -> a traceable forward, for the modules in `model` whose own forward fx cannot trace."""
    import torch.nn as nn

    forwards = {nn.MultiheadAttention: _self_attention, nn.TransformerEncoderLayer: _encoder_layer,
                nn.TransformerEncoder: _encoder}  # exactly these classes: a subclass may change forward
    return {id(module): _bound(forwards[type(module)], module) for module in model.modules()
            if type(module) in forwards}


def _bound(forward: Callable[..., Any], module: Any) -> Callable[..., Any]:
    return lambda *args, **kwargs: forward(module, *args, **kwargs)


def _self_attention(m: Any, query: Any, key: Any, value: Any, key_padding_mask: Any = None, need_weights: bool = True,
                    attn_mask: Any = None, average_attn_weights: bool = True, is_causal: bool = False) -> Any:
    import torch
    import torch.nn.functional as F

    masked = key_padding_mask is not None or attn_mask is not None or is_causal
    if key is not query or value is not query or masked:
        raise Untranslatable("nn.MultiheadAttention other than unmasked self-attention (query, key, value the same)")
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn or (m.training and m.dropout > 0):
        raise Untranslatable("nn.MultiheadAttention with kdim/vdim, bias_k/v, zero attention or training dropout")
    x = query.transpose(0, 1) if m.batch_first else query  # (length, batch, embed)
    length, batch, embed = x.shape
    heads = m.num_heads
    head = embed // heads
    q, k, v = F.linear(x, m.in_proj_weight, m.in_proj_bias).chunk(3, dim=-1)  # fx unpacks, never iterates
    q = q.reshape(length, batch * heads, head).transpose(0, 1)
    k = k.reshape(length, batch * heads, head).transpose(0, 1)
    v = v.reshape(length, batch * heads, head).transpose(0, 1)
    # PyTorch scales q; scaling the scores instead is the same math and fuses into the softmax kernel
    weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * head ** -0.5, dim=-1)
    out = torch.bmm(weights, v).transpose(0, 1).reshape(length, batch, embed)
    out = F.linear(out, m.out_proj.weight, m.out_proj.bias)
    out = out.transpose(0, 1) if m.batch_first else out
    if not need_weights:
        return out, None
    weights = weights.reshape(batch, heads, length, length)
    return out, weights.mean(dim=1) if average_attn_weights else weights


def _encoder_layer(m: Any, src: Any, src_mask: Any = None, src_key_padding_mask: Any = None,
                   is_causal: bool = False) -> Any:
    if src_mask is not None or src_key_padding_mask is not None or is_causal:
        raise Untranslatable("nn.TransformerEncoderLayer with a mask")

    def attend(x: Any) -> Any:
        return m.dropout1(m.self_attn(x, x, x, need_weights=False)[0])

    def feed_forward(x: Any) -> Any:
        return m.dropout2(m.linear2(m.dropout(m.activation(m.linear1(x)))))

    if m.norm_first:
        x = src + attend(m.norm1(src))
        return x + feed_forward(m.norm2(x))
    x = m.norm1(src + attend(src))
    return m.norm2(x + feed_forward(x))


def _encoder(m: Any, src: Any, mask: Any = None, src_key_padding_mask: Any = None, is_causal: Any = None) -> Any:
    if mask is not None or src_key_padding_mask is not None or is_causal:
        raise Untranslatable("nn.TransformerEncoder with a mask")
    x = src
    for layer in m.layers:
        x = layer(x)
    return m.norm(x) if m.norm is not None else x
