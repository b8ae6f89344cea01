"""measure_nfa on the models researchers use (Hugging Face GPT-2, BERT and Llama from configs, torchvision's ViT,
ResNet and ConvNeXt, timm's ViT), each against an independent reference in float64: per-sample torch.func Jacobians
with respect to shifts that this file's own hooks add to each layer's output (or, for nn.MultiheadAttention's q, k,
v, to its inputs, whose gradients give the AGOP directly). transformers and timm are test extras; their tests skip
where absent."""

import pytest
import torch
from torch import nn
from torch.func import jacrev

from featlearn.metrics.model_nfa import agop

F64 = torch.float64
TOL = 1e-10
# functorch has no batching rule for some attention kernels and says so; its fallback is exact
pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning",
                                        "ignore:measure_nfa does not measure:UserWarning")


def _matrix(module):
    """W (out, in) of a Linear, transformers' Conv1D (weight in×out) or a conv (patch space of all its input
    channels: a grouped conv's is block-diagonal, group g's filters on group g's channels), read independently."""
    if type(module).__name__ == "Conv1D":
        return module.weight.detach().T
    w = module.weight.detach().reshape(module.weight.shape[0], -1)
    groups = getattr(module, "groups", 1)
    if groups == 1:
        return w
    rows, cols = w.shape[0] // groups, w.shape[1]
    full = torch.zeros(w.shape[0], cols * groups, dtype=w.dtype)
    for g in range(groups):
        full[g * rows:(g + 1) * rows, g * cols:(g + 1) * cols] = w[g * rows:(g + 1) * rows]
    return full


def _outputs(out):
    return out if isinstance(out, torch.Tensor) else out.logits if hasattr(out, "logits") else out[0]


def reference_agops(model, x, fused=()):
    """AGOP of every nn.Linear, Conv1D, conv and nn.MultiheadAttention projection of ``model`` over the samples x:
    for each sample alone, jacrev of its outputs with respect to zero shifts, K = (1/n) Σ_α Σ_j g gᵀ, AGOP = WᵀKW (q, k,
    v of an attention module: Σ g gᵀ of its input shifts). ``fused``: module names whose output is [q, k, v]."""
    model.eval()
    current, handles, sites = {}, [], {}
    for path, module in model.named_modules():
        if isinstance(module, nn.MultiheadAttention):
            def pre(mod, args, kwargs, p=path):
                args = list(args) + [kwargs.pop(k) for k in ("query", "key", "value") if k in kwargs]
                return tuple(a + current[f"{p}.{q}"] for a, q in zip(args[:3], "qkv")) + tuple(args[3:]), kwargs

            def post(mod, args, kwargs, out, p=path):
                return (out[0] + current[f"{p}.out_proj"], *out[1:])

            handles += [module.register_forward_pre_hook(pre, with_kwargs=True),
                        module.register_forward_hook(post, with_kwargs=True)]
            sites.update({f"{path}.{q}": ("input", module) for q in "qkv"} | {f"{path}.out_proj": ("mha", module)})
        elif (isinstance(module, nn.Linear | nn.Conv2d) or type(module).__name__ == "Conv1D") and not any(
                path.startswith(f"{p}.") for p, (kind, _) in sites.items() if kind == "mha"):
            handles.append(module.register_forward_hook(lambda mod, args, out, p=path: out + current[p]))
            sites[path] = ("output", module)
    shapes = {}
    try:
        current.update({site: torch.zeros((), dtype=F64) for site in sites})
        recorders = []
        for site in sites:  # the shape of each shift, from one sample
            kind, module = sites[site]
            if kind == "output":
                recorders.append(module.register_forward_hook(lambda m, a, o, s=site: shapes.__setitem__(s, o.shape)))
        for path, module in model.named_modules():
            if isinstance(module, nn.MultiheadAttention):
                recorders.append(module.register_forward_pre_hook(lambda m, a, p=path: shapes.update(
                    {f"{p}.{q}": t.shape for q, t in zip("qkv", a)})))
                recorders.append(module.register_forward_hook(lambda m, a, o, p=path: shapes.__setitem__(
                    f"{p}.out_proj", o[0].shape)))
        with torch.no_grad():
            model(x[:1])
        for handle in recorders:
            handle.remove()
        ks = {site: 0 for site in sites}
        for a in range(len(x)):
            def f(shifts, xa=x[a:a + 1]):
                current.update(shifts)
                return _outputs(model(xa)).flatten()

            zeros = {site: torch.zeros(shapes[site], dtype=F64) for site in sites}
            jacs = jacrev(f)(zeros)  # {site: (outputs, *shape)}
            for site, jac in jacs.items():
                kind, module = sites[site]
                jac = jac.detach().movedim(2, -1) if isinstance(module, nn.Conv2d) else jac.detach()
                flat = jac.reshape(-1, jac.shape[-1])
                ks[site] = ks[site] + flat.T @ flat / len(x)
    finally:
        for handle in handles:
            handle.remove()
    agops = {}
    for site, (kind, module) in sites.items():
        if kind == "input":
            agops[site] = ks[site]
        elif kind == "mha":
            w = module.out_proj.weight.detach()
            agops[site] = w.T @ ks[site] @ w
        elif site in fused:
            w, width = _matrix(module), _matrix(module).shape[1]
            for i, q in enumerate("qkv"):
                rows = slice(i * width, (i + 1) * width)
                agops[f"{site}.{q}"] = w[rows].T @ ks[site][rows, rows] @ w[rows]
        else:
            agops[site] = _matrix(module).T @ ks[site] @ _matrix(module)
    return agops


def _assert_matches(model, x, fused=()):
    training = model.training
    got = agop(model, x, batch_size=2)
    assert model.training == training  # measured in eval mode, then put back
    expected = reference_agops(model, x, fused)
    assert sorted(got) == sorted(expected)
    for name, reference in expected.items():
        assert float(reference.norm()) > 0, name  # a zero AGOP would match anything
        assert float((got[name] - reference).norm() / reference.norm()) <= TOL, name
    return got


def _randomised(model, seed, scale=0.3):
    """Every parameter moved by scale·N(0, 1): no zero-initialised head or bias hides a layer."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return model


def test_gpt2_conv1d_layers_and_fused_c_attn_match_the_reference():
    transformers = pytest.importorskip("transformers", reason="transformers is a test extra (pip install -e .[dev])")
    config = transformers.GPT2Config(vocab_size=11, n_positions=8, n_embd=8, n_layer=2, n_head=2,
                                     bos_token_id=0, eos_token_id=0, attn_implementation="eager")
    torch.manual_seed(0)
    model = _randomised(transformers.GPT2LMHeadModel(config).double(), 1)
    idx = torch.randint(0, 11, (3, 5), generator=torch.Generator().manual_seed(2))
    fused = [f"transformer.h.{b}.attn.c_attn" for b in range(2)]
    got = _assert_matches(model, idx, fused)
    assert {"transformer.h.0.attn.c_attn.q", "transformer.h.1.mlp.c_fc", "transformer.h.1.mlp.c_proj",
            "transformer.h.0.attn.c_proj", "lm_head"} <= set(got)


def test_llama_grouped_query_attention_and_gated_mlp_match_the_reference(monkeypatch):
    """Llama's family (grouped-query attention, rotary positions, SDPA's causal kernel, a SiLU-gated MLP). Its
    RMSNorm computes in float32 whatever the model's dtype (transformers' choice), which leaves a float64 Llama
    float32-accurate (both sides then differ by ~4e-8); computed in the model's dtype here, as the reference needs."""
    transformers = pytest.importorskip("transformers", reason="transformers is a test extra (pip install -e .[dev])")
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    def rms_norm(self, h):
        return self.weight * h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)

    monkeypatch.setattr(LlamaRMSNorm, "forward", rms_norm)
    config = transformers.LlamaConfig(vocab_size=17, hidden_size=8, intermediate_size=12, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8)
    torch.manual_seed(15)
    model = _randomised(transformers.LlamaForCausalLM(config).double(), 16)
    got = _assert_matches(model, torch.randint(0, 17, (3, 5), generator=torch.Generator().manual_seed(17)))
    assert {"model.layers.0.self_attn.k_proj", "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.down_proj",
            "lm_head"} <= set(got)


def test_bert_linear_layers_match_the_reference():
    transformers = pytest.importorskip("transformers", reason="transformers is a test extra (pip install -e .[dev])")
    config = transformers.BertConfig(vocab_size=13, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=16, max_position_embeddings=8, num_labels=3,
                                     attn_implementation="eager")
    torch.manual_seed(3)
    model = _randomised(transformers.BertForSequenceClassification(config).double(), 4)
    got = _assert_matches(model, torch.randint(0, 13, (3, 5), generator=torch.Generator().manual_seed(5)))
    assert "bert.encoder.layer.0.attention.self.query" in got and "classifier" in got


def test_torchvision_vit_attention_projections_match_the_reference():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(6)
    model = torchvision.models.VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=2, hidden_dim=8,
                                                 mlp_dim=16, num_classes=3)
    model = _randomised(model.double(), 7)  # its head is zero at init
    got = _assert_matches(model, torch.randn(3, 3, 16, 16, dtype=F64, generator=torch.Generator().manual_seed(8)))
    assert {"conv_proj", "encoder.layers.encoder_layer_0.self_attention.q", "heads.head"} <= set(got)


def test_torchvision_resnet_convs_downsample_and_fc_match_the_reference():
    resnet = pytest.importorskip("torchvision.models.resnet")
    BasicBlock, ResNet = resnet.BasicBlock, resnet.ResNet  # noqa: N806

    torch.manual_seed(9)
    model = ResNet(BasicBlock, [1, 1, 1, 1], num_classes=3)
    for module in model.modules():  # BatchNorm on running statistics, as in eval mode: not the identity
        if isinstance(module, nn.BatchNorm2d):
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    model = _randomised(model.double(), 10, 0.05)
    model.train()  # BatchNorm on batch statistics unless measured in eval mode, as it is
    got = _assert_matches(model, torch.randn(2, 3, 16, 16, dtype=F64, generator=torch.Generator().manual_seed(11)))
    assert {"conv1", "layer2.0.downsample.0", "fc"} <= set(got)


def test_torchvision_convnext_depthwise_convs_and_channels_last_linears_match_the_reference():
    convnext = pytest.importorskip("torchvision.models.convnext")
    torch.manual_seed(18)
    model = convnext.ConvNeXt([convnext.CNBlockConfig(8, 16, 1), convnext.CNBlockConfig(16, None, 1)], num_classes=3)
    model = _randomised(model.double(), 19)
    got = _assert_matches(model, torch.randn(2, 3, 16, 16, dtype=F64, generator=torch.Generator().manual_seed(20)))
    assert {"features.1.0.block.0", "features.1.0.block.3", "features.2.1", "classifier.2"} <= set(got)
    assert got["features.1.0.block.0"].shape == (8 * 49, 8 * 49)  # the depthwise 7×7 conv, all channels' patches


def test_timm_vit_fused_qkv_matches_the_reference():
    timm = pytest.importorskip("timm", reason="timm is a test extra (pip install -e .[dev])")
    from timm.models.vision_transformer import VisionTransformer

    torch.manual_seed(12)
    model = VisionTransformer(img_size=16, patch_size=8, embed_dim=8, depth=1, num_heads=2, mlp_ratio=2,
                              num_classes=3)
    assert timm.__version__
    model = _randomised(model.double(), 13)
    got = _assert_matches(model, torch.randn(2, 3, 16, 16, dtype=F64, generator=torch.Generator().manual_seed(14)),
                          ["blocks.0.attn.qkv"])
    assert {"blocks.0.attn.qkv.q", "blocks.0.attn.proj", "blocks.0.mlp.fc1", "head"} <= set(got)
