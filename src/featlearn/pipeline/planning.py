"""The build's plan: config.yaml at one scale turned into the tables, file names and code inputs the rules read.

``Plan(config)`` is everything the Snakefile decides before Snakemake builds its DAG: the experiments this build runs
(the configured scale's, or their rehearsal), each one's units (its independent jobs, from its kind's module), the
datasets they read, the figures and the stores each reads, every job's file names and code inputs
(``featlearn.pipeline.deps``), and what each job asks of a scheduler (``featlearn.pipeline.resources``). It is plain
Python, importable and testable without Snakemake: ``workflow/rules/common.smk`` makes one and hands the rules its
answers, turning each job's wildcards into arguments. Paths are relative to the repository root, where Snakemake runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

from featlearn import config as fc
from featlearn import optim
from featlearn.claims import figure_modules
from featlearn.data import prepare
from featlearn.figures import figure_numbers
from featlearn.pipeline import deps, numerics, rehearsal, twins
from featlearn.pipeline import experiments as fx
from featlearn.pipeline import resources as fr

SCALE_STAMP = "results/scale.txt"  # the scale the figures/figN.pdf shortcuts show
STAGES = ("train", "measure")  # the rules whose jobs may ask for a GPU


def one_of(names: Any) -> str:
    """A wildcard constraint matching exactly these names (never empty: Snakemake needs a regex)."""
    return "|".join(re.escape(n) for n in names) or "NONE"


def projection_figure(which: str) -> str | None:
    """The one figure ('alignment/fig4') a projection target's {which} names (projection/alignment/fig4.csv), or None
    for all figures (projection.csv)."""
    return which.strip("/") or None


class Plan:
    """What one Snakemake call builds, derived from its ``config`` (config.yaml with ``--config`` on top)."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.scale = config["scale"]
        self.rehearse = config.get("rehearse", False)
        steps = config.get("rehearse_steps", rehearsal.STEPS)
        # The threads every compute job runs with: part of each result's identity (featlearn.pipeline.numerics), so
        # every experiment and unit spec carries it and another count is another file.
        self.threads = config.get("threads", 1)
        # A build's label: the scale, or '<scale>-rehearsal'. Each keeps its own data, runs, stores, claims, logs,
        # benchmarks (results/<tag>/) and figures (figures/<tag>/), so scales and a rehearsal never replace each other.
        self.tag = rehearsal.scale_tag(self.scale, self.rehearse)
        self.results = f"results/{self.tag}"
        self.figures = f"figures/{self.tag}"
        self._experiments(config, steps)
        self._figures()
        # A rehearsal of this scale, where one was run, measured every job: its projection sets their runtime and
        # memory (featlearn.pipeline.resources).
        self.projection = (
            {} if self.rehearse
            else fr.load_projection(f"results/{rehearsal.scale_tag(self.scale, True)}/projection.csv"))

    def _experiments(self, config: dict, steps: int) -> None:
        """The configured scale's experiments (``planned``), what this build runs of them (the same, or their
        rehearsal), their units and the datasets the units read."""
        planned = {name: fc.experiment(config, name) for name in config["experiments"]}
        # A rounding twin of each experiment whose kind amplifies rounding (featlearn.pipeline.twins), at the scales
        # `twins` names
        twinned = {n for n, e in planned.items() if fx.KINDS[e["kind"]].get("twin")} if twins.wanted(config) else set()
        self.planned = twins.with_twins(planned, twinned)
        self.experiments = {
            name: (rehearsal.cut(e, fx.KINDS[e["kind"]]["repeats"], config.get("rehearse_max_n"), steps)
                   if self.rehearse else e) | {"threads": self.threads}
            for name, e in self.planned.items()
        }
        self.kind = {name: fx.kind_of(e["kind"]) for name, e in self.experiments.items()}
        self.units = {name: self._units(name, e) for name, e in self.experiments.items()}
        if self.rehearse:  # real datasets absent from data_dir are rehearsed on labelled stand-ins of their real size
            self.units = {name: rehearsal.cut_units(units, config["data_dir"], steps)
                          for name, units in self.units.items()}
        self.planned_units = {name: self._units(name, e) for name, e in self.planned.items()}
        # Experiments whose real data this machine lacks (and will not download): their figures fail at the data
        # stage with the fix, and their claims are "not measured" instead of holding back every other claim.
        self.unreachable = set() if config["download"] else {
            n for n, units in self.units.items() if self.needs_absent_data(units.values())}
        # Experiments whose units go through the training loop before they are measured.
        self.trained = [n for n, e in self.experiments.items() if fx.KINDS[e["kind"]]["trained"]]
        self.datasets = {fc.dataset_key(p): p for n, units in self.units.items() for u in units.values()
                         for p in self.kind[n].datasets(u)}
        self.synthetic_data = {key: p for key, p in self.datasets.items() if "task" in p}
        self.real_data = {key: p for key, p in self.datasets.items() if "dataset" in p}

    def _units(self, name: str, exp: dict) -> dict[str, dict]:
        """An experiment's units, each with the spec's threads; a twin's with its initial weights nudged."""
        units = fx.with_threads(self.kind[name].units(name, exp), self.threads)
        return twins.nudged(units) if twins.is_twin(name) else units

    def _figures(self) -> None:
        """Each figure module's stores (its EXPERIMENTS, read without importing it), its targets and shortcuts, each
        paper's claims' stores, and what the reproduction manifest digests."""
        self.figure_numbers = figure_numbers()
        self.papers = list(self.figure_numbers)
        self.figure_table = {(paper, n): deps.literal(f"featlearn.figures.{paper}.fig{n}", "EXPERIMENTS")
                             for paper, numbers in self.figure_numbers.items() for n in numbers}
        self.all_figures = [f"{self.figures}/{paper}/fig{n}.pdf" for paper, n in self.figure_table]
        # figures/<paper>/figN.pdf and figures/figN.pdf (alignment): shortcuts to the configured scale's figures,
        # copies that `all` keeps current; a rehearsal makes none (its figures never stand where a real one is sought)
        self.shortcuts = [] if self.rehearse else (
            [f"figures/{paper}/fig{n}.pdf" for paper, n in self.figure_table]
            + [f"figures/fig{n}.pdf" for paper, n in self.figure_table if paper == "alignment"])
        # The stores each paper's claims read (each figure module's STORES, read without importing it): only
        # experiments config.yaml defines and whose data this machine has; the others' claims are reported as not
        # measured, so a build of the figures that fit a machine evaluates theirs.
        self.claim_modules = {paper: figure_modules(paper) for paper in self.papers}
        self.claim_stores = {
            paper: [n for e in dict.fromkeys(e for m in self.claim_modules[paper] for e in deps.literal(m, "STORES"))
                    if e in self.experiments and e not in self.unreachable
                    for n in (e, twins.twin_name(e)) if n in self.experiments]
            for paper in self.papers}
        # What the report shows besides the figures; `all` lists them so that `snakemake --report` finds them.
        self.report_files = [f"{self.results}/claims/table.md", f"{self.results}/claims/claims.html"]
        # Each figure's experiments, for the README claims block's line of the figures built.
        self.readme_figures = {paper: {n: self.figure_table[paper, n] for n in self.figure_numbers[paper]}
                               for paper in self.papers}

    def needs_absent_data(self, units: Any) -> bool:
        """Whether a unit reads a real dataset that data_dir lacks and that no download will fetch."""
        blocks = [u.get("data", {}) | {"dataset": u.get("data", {}).get("dataset", u.get("dataset"))} for u in units]
        return any(b.get("source") == "real" and not rehearsal.present(b["dataset"], self.config["data_dir"])
                   for b in blocks)

    # Files. Runs and stores carry their spec's hash in the name, so another configuration is another file.
    def data_path(self, params: dict) -> str:
        return f"{self.results}/data/{fc.dataset_key(params)}.pt"

    def spec_stamp(self, experiment: str) -> str:
        return f"{self.results}/specs/{experiment}.json"

    def run_path(self, experiment: str, unit: str, suffix: str = "pt") -> str:
        """A trained run (or, with suffix 'ckpt', its checkpoint)."""
        return f"{self.results}/runs/{experiment}/{unit}.{fc.spec_hash(self.units[experiment][unit])}.{suffix}"

    def unit_store_path(self, experiment: str, unit: str) -> str:
        return f"{self.results}/metrics/{experiment}/{unit}.{fc.spec_hash(self.units[experiment][unit])}.nc"

    def store_path(self, experiment: str) -> str:
        """An experiment's store, named by its spec's hash like every run and unit store."""
        return f"{self.results}/metrics/{experiment}.{fc.spec_hash(self.experiments[experiment])}.nc"

    def usage_path(self, stage: str, experiment: str, unit: str) -> str:
        return f"{self.results}/usage/{stage}/{experiment}/{unit}.{fc.spec_hash(self.units[experiment][unit])}.json"

    def built_files(self) -> list[str]:
        """Every run and store (unit stores included) of the experiments the figures read and this machine's data
        reaches: what the reproduction manifest digests."""
        read = [e for e in self.figure_experiments_of(None) if e not in self.unreachable]
        built = read + [t for e in read if (t := twins.twin_name(e)) in self.experiments]
        return [*[self.run_path(e, u) for e in built if e in self.trained for u in self.units[e]],
                *[self.unit_store_path(e, u) for e in built for u in self.units[e]],
                *[self.store_path(e) for e in built]]

    def missing_intermediates(self) -> list[str]:
        """The runs and stores (unit stores included) that the figures or the reproduction check read, missing while
        a file made from them exists: Snakemake rebuilds no missing intermediate file whose readers are up to date,
        so without forcing them a deleted store stayed missing ("Nothing to be done") and the check stale."""
        manifest = f"{self.results}/reproduction/manifest.json"
        missing = set()
        for e in self.figure_experiments_of(None):
            if e in self.unreachable:
                continue
            figures = [f"{self.figures}/{p}/fig{n}.pdf" for (p, n), stores in self.figure_table.items() if e in stores]
            for u in self.units[e]:
                chain = [*([self.run_path(e, u)] if e in self.trained else []), self.unit_store_path(e, u),
                         self.store_path(e)]
                missing.update(path for i, path in enumerate(chain) if not os.path.exists(path)
                               and any(os.path.exists(later) for later in [*chain[i + 1:], *figures, manifest]))
        return sorted(missing)

    def stamps(self) -> dict[str, str]:
        """Each experiment's resolved spec stamp (with a native build's numerics mode) and, unless rehearsing, the
        configured scale's, with its text."""
        found = {} if self.rehearse else {SCALE_STAMP: f"{self.scale}\n"}
        mode = numerics.mode_stamp(self.config.get("numerics", "pinned"))
        return found | {self.spec_stamp(n): fc.spec_json(exp | mode) + "\n" for n, exp in self.experiments.items()}

    def write_stamps(self) -> None:
        """Write each experiment's resolved spec, and the configured scale, as files rewritten only when they change:
        every job of an experiment reads its stamp, and every shortcut the scale's, so a config change or a scale
        switch reruns what it affects by file times alone, even where Snakemake's metadata is gone (a fresh clone with
        copied results, `rm -rf .snakemake`), which would otherwise find the old results "up to date"."""
        for path, text in self.stamps().items():
            fc.write_if_changed(path, text)

    def unwritten_stamps(self) -> list[str]:
        """The spec and scale stamps (absolute paths) that are missing or that a real build would rewrite now: a dry
        run writes none, and has Snakemake see them as written (``snakemake_patches.plan_unwritten``)."""
        return [os.path.abspath(path) for path, text in self.stamps().items()
                if not os.path.exists(path) or Path(path).read_text() != text]

    # What a job's file name says it builds: refused rather than rebuilt mislabelled when the name carries another
    # spec's hash than config.yaml's.
    def unit(self, experiment: str, unit: str, spec: str) -> dict:
        """The unit a job builds."""
        found = self.units[experiment][unit]
        if spec != fc.spec_hash(found):
            raise ValueError(f"{experiment}/{unit}.{spec}: no unit of config.yaml has spec hash {spec} "
                             f"(the current one is {fc.spec_hash(found)})")
        return found

    def experiment(self, experiment: str, spec: str) -> dict:
        """The experiment a combine job builds."""
        exp = self.experiments[experiment]
        if spec != fc.spec_hash(exp):
            raise ValueError(f"{experiment}.{spec}: config.yaml's {experiment} has spec hash {fc.spec_hash(exp)}")
        return exp

    # Code inputs: the import closure of each job's script and of the modules it dispatches to, as code stamps, and
    # the stamp of each dispatch entry it chooses (featlearn.pipeline.deps), never a hand-written list: an edit reruns
    # exactly the jobs whose code runs the edited file or entry, and only when it changes what the code does.
    def data_code(self, params: dict) -> list[str]:
        """The prepare_data script and the one module that prepares this data block (its dataset's or its source's);
        ``prepare.module`` first, for its error naming the choices."""
        prepare.module(params)
        return deps.job_code("prepare_data", choices=[("featlearn.data.prepare", prepare.choice(params))])

    def train_code(self, spec: dict) -> list[str]:
        """The train script, the run's architecture and optimizer and, for an optimizer steered by a metric (its
        entry of ``optim.DISPATCH`` says which, so that entry's stamp covers the choice), the metric's module."""
        optimizer = spec["train"]["optimizer"]
        metric = optim.metrics(optimizer)
        return deps.job_code("train", *([metric] if metric else []),
                             choices=[("featlearn.models", spec["model"].get("arch", "mlp")),
                                      ("featlearn.optim", optimizer)])

    def kind_code(self, experiment: str, function: str) -> str:
        """The experiment's kind module as a job that calls only its `function` runs it (``deps.closure``)."""
        return f'{fx.KINDS[self.experiments[experiment]["kind"]]["module"]}:{function}'

    def measure_code(self, experiment: str, unit: dict) -> list[str]:
        """The measure script, the experiment's kind module and what the unit dispatches to (architecture, family)."""
        return deps.job_code("measure", self.kind_code(experiment, "measure"),
                             choices=self.kind[experiment].entries(unit))

    def combine_code(self, experiment: str) -> list[str]:
        return deps.job_code("combine", self.kind_code(experiment, "combine"))

    def figure_code(self, paper: str, n: str) -> list[str]:
        return deps.job_code("render", f"featlearn.figures.{paper}.fig{n}")

    def claims_code(self, paper: str) -> list[str]:
        """The claims script and the paper's figure modules, which it imports by name."""
        return deps.job_code("claims", *self.claim_modules[paper])

    def figure_stores(self, paper: str, n: str) -> list[str]:
        """The stores a figure reads; a figure that does not exist, or reads an experiment config.yaml no longer
        defines (whose old store may still lie in results/), stops the DAG with the fix."""
        if (paper, int(n)) not in self.figure_table or n != str(int(n)):
            raise ValueError(
                f"{self.figures}/{paper}/fig{n}.pdf is not a figure this pipeline builds (a figure is a module "
                f"src/featlearn/figures/<paper>/fig<N>.py, found by featlearn.figures.figure_numbers); "
                f"targets: {', '.join(self.all_figures)}"
            )
        stores = self.figure_table[(paper, int(n))]
        missing = [e for e in stores if e not in self.experiments]
        if missing:
            raise ValueError(
                f"{self.figures}/{paper}/fig{n}.pdf reads experiment(s) {missing}, which config.yaml does not define "
                f"(a store left in {self.results}/metrics/ would be stale); define them again in config.yaml, or "
                f"build other targets"
            )
        return stores

    def figure_experiments_of(self, figure: str | None) -> list[str]:
        """The experiments of one figure ('alignment/fig4'), or of all figures (None)."""
        if figure is None:
            return sorted({e for stores in self.figure_table.values() for e in stores if e in self.experiments})
        paper, name = PurePosixPath(figure).parts
        return self.figure_stores(paper, name.removeprefix("fig"))

    # What each job asks of a scheduler (featlearn.pipeline.resources: one table, and the one rule for who gets a
    # GPU); the SLURM profile turns these into sbatch options.
    def fixed_resources(self, weight: str, attempt: int) -> dict[str, int]:
        """The resources of a light rule that never uses a GPU, by weight, growing with the attempt."""
        return fr.fixed_resources(self.scale, weight, attempt)

    def data_resources(self, key: str, weight: str, attempt: int) -> dict[str, int]:
        """A data job's resources: its projection where there is one, else the table's, by weight."""
        return {**fr.fixed_resources(self.scale, weight, attempt),
                **fr.projected(self.projection.get(f"data/{key}"), 0, attempt)}

    def unit_resources(self, stage: str, experiment: str, unit: str, attempt: int = 1) -> dict[str, Any]:
        """Every resource (runtime, mem_mb, gpu, gpu_mem_mb) of the `stage` job of a unit: from its projection where
        there is one, else from its experiment's kind, `device` and, for GPU memory, its unit's analytic need."""
        spec = self.units[experiment][unit]
        blocks = self.kind[experiment].datasets(spec)
        row = self.projection.get(f"{stage}/{experiment}/{unit}")
        kind = self.experiments[experiment]["kind"]
        return fr.job_resources(self.config["device"], self.scale, stage, kind, row, attempt, spec, blocks)

    def job_resources(self, stage: str, experiment: str, unit: str, attempt: int, cards: fr.GpuCards) -> dict:
        """``unit_resources``, refused when no card of ``cards`` holds the job."""
        out = self.unit_resources(stage, experiment, unit, attempt)
        fr.check_cards({f"{stage} {experiment}/{unit}": out["gpu_mem_mb"]}, cards)
        return out

    def check_gpu_jobs(self, jobs: list[tuple[str, str, str]], cards: fr.GpuCards) -> None:
        """Refuse, before any job runs, every job of ``jobs`` ((stage, experiment, unit) of the plan's ``STAGES``)
        that one card cannot hold, all named at once: Snakemake asks for a job's resources only when it is ready,
        maybe hours in."""
        fr.check_cards({f"{stage} {e}/{u}": self.unit_resources(stage, e, u)["gpu_mem_mb"] for stage, e, u in jobs},
                       cards)

    def projection_tables(self, experiments: list[str]) -> dict[str, Any]:
        """What the projection script needs of the DAG, for these experiments: both builds' units, their data
        blocks, the figures reading each experiment and the usage record of every rehearsed job."""
        datasets, usage = {}, {}
        for e in experiments:
            for build, units in (("paper", self.planned_units[e]), ("rehearsal", self.units[e])):
                for uid, unit in units.items():
                    datasets[f"{build}/{e}/{uid}"] = self.kind[e].datasets(unit)
            for uid in self.units[e]:
                for stage in (["train"] if e in self.trained else []) + ["measure"]:
                    usage[f"{stage}/{e}/{uid}"] = self.usage_path(stage, e, uid)
                for block in self.kind[e].datasets(self.units[e][uid]):
                    usage[f"data/{fc.dataset_key(block)}"] = f"{self.results}/usage/data/{fc.dataset_key(block)}.json"
        figures = {e: [f"{p}/fig{n}" for (p, n), stores in self.figure_table.items() if e in stores]
                   for e in experiments}
        return {
            "planned": {e: self.planned_units[e] for e in experiments},
            "rehearsed": {e: self.units[e] for e in experiments},
            "kinds": {e: self.experiments[e]["kind"] for e in experiments},
            "trained": [e for e in experiments if e in self.trained],
            "datasets": datasets,
            "figures": figures,
            "usage": usage,
        }
