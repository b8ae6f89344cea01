"""A small GPT after karpathy/nanoGPT ``model.py`` (docs/figures/alignment.md, Fig 2).

Pre-LN blocks (causal self-attention, then a 4C GELU MLP), learned position embeddings, a final LayerNorm and an
lm_head tied to the token embedding. Differences from nanoGPT: ``forward`` always returns the logits of every
position (the loss is computed by the caller) and takes ``qkv_shifts`` so the NFA measurement can differentiate with
respect to the queries, keys and values. The paper's model (n_layer 3, n_head 6, n_embd 384, block 256, vocab 65)
has 5,336,064 parameters by nanoGPT's count, which leaves out the position embeddings, and 5,434,368 in all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int = 256
    n_layer: int = 3
    n_head: int = 6
    n_embd: int = 384
    dropout: float = 0.0
    bias: bool = False


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (nn.LayerNorm cannot drop only the bias)."""

    def __init__(self, ndim: int, bias: bool) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    """Multi-head causal attention; ``c_attn`` maps LN_1(x_t) to [q_t, k_t, v_t] (rows 0:C, C:2C, 2C:3C)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if config.n_embd % config.n_head != 0:
            raise ValueError(f"n_embd ({config.n_embd}) must be a multiple of n_head ({config.n_head})")
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.dropout = config.dropout

    def forward(self, x: torch.Tensor, qkv_shift: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, C) -> (B, T, C); ``qkv_shift`` (B, T, 3C) is added to [q, k, v] before the heads are split."""
        B, T, C = x.shape
        qkv = self.c_attn(x)
        if qkv_shift is not None:
            qkv = qkv + qkv_shift
        # (B, T, C) -> (B, n_head, T, head_size) for each of q, k, v.
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in qkv.split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """C -> 4C -> GELU -> C."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """x + attn(LN_1(x)), then x + mlp(LN_2(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, qkv_shift: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), qkv_shift)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Token ids (B, T) -> next-token logits (B, T, vocab_size)."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = LayerNorm(config.n_embd, config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # Weight tying (nanoGPT, after Press & Wolf 2017): one matrix embeds tokens and reads them out.
        self.wte.weight = self.lm_head.weight

    def forward(self, idx: torch.Tensor, qkv_shifts: list[torch.Tensor] | None = None) -> torch.Tensor:
        """``qkv_shifts``: one (B, T, 3C) tensor per block added to its c_attn output, so that their gradients are
        ∂f/∂q_t, ∂f/∂k_t, ∂f/∂v_t for every block, sequence and position in one backward pass."""
        T = idx.shape[1]
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for i, block in enumerate(self.blocks):
            x = block(x, None if qkv_shifts is None else qkv_shifts[i])
        return self.lm_head(self.ln_f(x))


def init_gpt(model: GPT, generator: torch.Generator) -> GPT:
    """nanoGPT's init from ``generator``: Linear and Embedding weights N(0, 0.02²), biases 0, and every residual
    projection (``c_proj.weight``) N(0, (0.02/√(2·n_layer))²), GPT-2's scaling for the residual stream's growth."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.02, generator=generator)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding) and module is not model.wte:  # wte is lm_head's weight
                nn.init.normal_(module.weight, 0.0, 0.02, generator=generator)
        for name, p in model.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * model.config.n_layer), generator=generator)
    return model


def num_params(model: GPT, non_embedding: bool = True) -> int:
    """Parameter count, the tied matrix counted once; nanoGPT's default leaves out the position embeddings."""
    n = sum(p.numel() for p in model.parameters())
    return n - model.wpe.weight.numel() if non_embedding else n


def attention_weights(model: GPT) -> dict[tuple[int, str], torch.Tensor]:
    """W_q, W_k, W_v (C×C each, rows [0:C], [C:2C], [2C:3C] of c_attn.weight) keyed by (block, proj), block
    1-based and proj in "q", "k", "v". Detached views: clone to keep a snapshot."""
    C = model.config.n_embd
    out = {}
    for b, block in enumerate(model.blocks, start=1):
        w = block.attn.c_attn.weight.detach()
        for i, proj in enumerate("qkv"):
            out[(b, proj)] = w[i * C : (i + 1) * C]
    return out


def build(m: dict, shape: None, out: int, generator: torch.Generator) -> GPT:
    """nanoGPT for a run's ``model`` block over a vocabulary of ``out`` characters (``models.build_model``)."""
    config = GPTConfig(vocab_size=out, block_size=m["block_size"], n_layer=m["n_layer"], n_head=m["n_head"],
                       n_embd=m["n_embd"], dropout=m.get("dropout", 0.0), bias=m.get("bias", False))
    return init_gpt(GPT(config), generator)
