import torch

from featlearn.models.gpt import GPT, GPTConfig, init_gpt
from featlearn.optim.adamw import configure_adamw


def test_adamw_decays_matrices_only():
    model = init_gpt(GPT(GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=12)),
                     torch.Generator().manual_seed(0))
    opt = configure_adamw(model, lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))
    assert opt.defaults["betas"] == (0.9, 0.99)
