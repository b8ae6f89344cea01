import pytest
import torch
import torch.nn.functional as F

from featlearn.metrics.attention_nfa import attention_feature_covariances, exact_attention_feature_covariances
from featlearn.models.gpt import GPT, GPTConfig, init_gpt

C = 12


def _tiny_gpt(seed=0):
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=C)
    model = init_gpt(GPT(config), torch.Generator().manual_seed(seed)).double()
    with torch.no_grad():  # std 0.02 makes attention nearly uniform: move away from init so K has structure
        for p in model.parameters():
            if p.dim() == 2:
                p.mul_(15)
    idx = torch.randint(0, 11, (3, 5), generator=torch.Generator().manual_seed(seed))
    return model, idx


def _rel_error(est, exact):
    return max(float((est[key] - exact[key]).norm() / exact[key].norm()) for key in exact)


def test_random_probe_k_converges_to_the_exact_k():
    model, idx = _tiny_gpt()
    exact = exact_attention_feature_covariances(model, idx)
    assert sorted(exact) == [(b, p) for b in (1, 2) for p in "kqv"]
    assert all(k.shape == (C, C) and k.dtype == torch.float64 for k in exact.values())
    g = torch.Generator().manual_seed(0)
    few = _rel_error(attention_feature_covariances(model, idx, probes=2, generator=g), exact)
    many = _rel_error(attention_feature_covariances(model, idx, probes=400, generator=g), exact)
    # Monte Carlo error ~ 1/√M: about 14× smaller expected; ask for 5×.
    assert many < few / 5
    assert many < 0.15


def test_probe_estimator_is_deterministic_for_a_fixed_generator():
    model, idx = _tiny_gpt(1)
    a = attention_feature_covariances(model, idx, probes=3, generator=torch.Generator().manual_seed(4))
    b = attention_feature_covariances(model, idx, probes=3, generator=torch.Generator().manual_seed(4))
    c = attention_feature_covariances(model, idx, probes=3, generator=torch.Generator().manual_seed(5))
    assert all(torch.equal(a[key], b[key]) for key in a)
    assert not torch.equal(a[(1, "q")], c[(1, "q")])


def _jacobian_wrt_one_token(model, idx, block, b, t):
    """∂ logits / ∂[q_t, k_t, v_t] of sequence b at block ``block`` (0-based), (B·T·V, 3C), by replacing that token's
    c_attn output with a leaf in a forward hook: a path that does not use qkv_shifts."""
    c_attn = model.blocks[block].attn.c_attn

    def logits_of(qkv_t):
        def hook(_m, _i, out):
            out = out.clone()
            out[b, t] = qkv_t
            return out

        handle = c_attn.register_forward_hook(hook)
        try:
            return model(idx).flatten()
        finally:
            handle.remove()

    with torch.no_grad():
        qkv_t = c_attn(model.blocks[block].ln_1(_block_input(model, idx, block)))[b, t]
    return torch.autograd.functional.jacobian(logits_of, qkv_t)


def _block_input(model, idx, block):
    x = model.wte(idx) + model.wpe(torch.arange(idx.shape[1]))
    for i in range(block):
        x = model.blocks[i](x)
    return x


def test_qkv_shift_gradients_are_the_query_key_value_jacobians():
    model, idx = _tiny_gpt(2)
    model.eval()
    block, b, t = 1, 2, 3
    expected = _jacobian_wrt_one_token(model, idx, block, b, t)

    def logits_of_shift(shift):
        shifts = [torch.zeros(*idx.shape, 3 * C, dtype=torch.float64) for _ in model.blocks]
        shifts[block] = shift
        return model(idx, shifts).flatten()

    got = torch.autograd.functional.jacobian(logits_of_shift, torch.zeros(*idx.shape, 3 * C, dtype=torch.float64))
    torch.testing.assert_close(got[:, b, t], expected)
    assert expected[:, :C].abs().max() > 0 and expected[:, C : 2 * C].abs().max() > 0
    # The exact K_q of that block is the sum of these outer products over tokens (here checked for the q block).
    k_q = exact_attention_feature_covariances(model, idx)[(block + 1, "q")]
    per_token = got[:, :, :, :C]
    torch.testing.assert_close(k_q, torch.einsum("obti,obtj->ij", per_token, per_token) / len(idx))


def test_loss_target_is_the_gradient_of_the_summed_cross_entropy():
    model, idx = _tiny_gpt(3)
    targets = torch.roll(idx, -1, dims=1)
    ks = attention_feature_covariances(model, idx, probes=1, generator=torch.Generator(), target="loss",
                                       targets=targets)

    def loss_of_shift(shift):
        logits = model(idx, [shift, torch.zeros_like(shift)])
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")

    g = torch.autograd.functional.jacobian(loss_of_shift, torch.zeros(*idx.shape, 3 * C, dtype=torch.float64))
    g_v = g[..., 2 * C :].reshape(-1, C)
    torch.testing.assert_close(ks[(1, "v")], g_v.T @ g_v / len(idx))
    with pytest.raises(ValueError, match="targets"):
        attention_feature_covariances(model, idx, probes=1, generator=torch.Generator(), target="loss")
    with pytest.raises(ValueError, match="allowed"):
        attention_feature_covariances(model, idx, probes=1, generator=torch.Generator(), target="logit")

