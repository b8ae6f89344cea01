import math

import pytest
import torch

from featlearn.models.gpt import GPT, GPTConfig, attention_weights, init_gpt, num_params


def _tiny(seed=0, **kwargs):
    config = GPTConfig(**{"vocab_size": 11, "block_size": 8, "n_layer": 2, "n_head": 2, "n_embd": 12, **kwargs})
    return init_gpt(GPT(config), torch.Generator().manual_seed(seed)).double()


def test_paper_config_parameter_count():
    model = GPT(GPTConfig(vocab_size=65, block_size=256, n_layer=3, n_head=6, n_embd=384))
    # nanoGPT prints "number of parameters: 5.34M" (position embeddings left out); with them 5.43M (the paper's ≈5.4M).
    assert num_params(model) == 5_336_064
    assert num_params(model, non_embedding=False) == 5_434_368
    assert all(p.dim() > 1 or "bias" not in name for name, p in model.named_parameters())  # bias=False


def test_lm_head_is_tied_to_the_token_embedding():
    model = _tiny()
    assert model.lm_head.weight is model.wte.weight
    idx = torch.tensor([[3, 1, 4, 1, 5]])
    model(idx).sum().backward()
    # The tied matrix gets the gradient of both uses: nonzero rows for tokens never seen as input.
    assert model.wte.weight.grad[7].abs().sum() > 0


def test_changing_a_future_token_leaves_earlier_logits_unchanged():
    model = _tiny()
    a = torch.tensor([[3, 1, 4, 1, 5, 9]])
    b = a.clone()
    b[0, 4] = 2
    la, lb = model(a), model(b)
    torch.testing.assert_close(la[:, :4], lb[:, :4], rtol=0, atol=0)
    assert not torch.allclose(la[:, 4:], lb[:, 4:])
    assert la.shape == (1, 6, 11)


def test_init_is_deterministic_and_scales_residual_projections():
    a, b, c = _tiny(1), _tiny(1), _tiny(2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.lm_head.weight, c.lm_head.weight)
    big = init_gpt(GPT(GPTConfig(vocab_size=65, n_layer=3, n_embd=384)), torch.Generator().manual_seed(0))
    assert big.blocks[0].attn.c_attn.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert big.blocks[2].mlp.c_proj.weight.std().item() == pytest.approx(0.02 / math.sqrt(6), rel=0.02)
    assert big.wpe.weight.std().item() == pytest.approx(0.02, rel=0.02)
    assert torch.equal(big.blocks[0].ln_1.weight, torch.ones(384))


def test_qkv_shifts_add_to_the_queries_keys_and_values():
    model = _tiny()
    idx = torch.tensor([[3, 1, 4, 1, 5]])
    zeros = [torch.zeros(1, 5, 36, dtype=torch.float64) for _ in model.blocks]
    torch.testing.assert_close(model(idx, zeros), model(idx), rtol=0, atol=0)
    # A shift constant over positions is a bias on c_attn: here on the values of block 1.
    shift = torch.zeros(1, 5, 36, dtype=torch.float64)
    shift[..., 24:] = 0.3
    with torch.no_grad():
        ref = _tiny()
        ref.blocks[0].attn.c_attn = torch.nn.Linear(12, 36, bias=True).double()
        ref.blocks[0].attn.c_attn.weight.copy_(model.blocks[0].attn.c_attn.weight)
        ref.blocks[0].attn.c_attn.bias.copy_(shift[0, 0])
    torch.testing.assert_close(model(idx, [shift, zeros[1]]), ref(idx))


def test_attention_weights_are_the_row_blocks_of_c_attn():
    model = _tiny()
    ws = attention_weights(model)
    assert sorted(ws) == [(b, p) for b in (1, 2) for p in "kqv"]
    w = model.blocks[1].attn.c_attn.weight
    torch.testing.assert_close(torch.cat([ws[(2, "q")], ws[(2, "k")], ws[(2, "v")]]), w.detach())
    x = torch.randn(12, dtype=torch.float64)
    torch.testing.assert_close(ws[(2, "k")] @ x, model.blocks[1].attn.c_attn(x)[12:24].detach())


def test_sequences_longer_than_the_block_are_refused():
    with pytest.raises(ValueError, match="block_size"):
        _tiny()(torch.zeros(1, 9, dtype=torch.long))
