# featlearn: every figure of three feature-learning papers as a file target.
# data -> train -> metrics -> figures -> claims/report; see README.md and ../shared/DESIGN.md.
from featlearn import config as fc
from featlearn import experiments as fx
from featlearn.gpus import gpu_count


fc.check_yaml("config.yaml", workflow.basedir)


configfile: "config.yaml"


fx.validate(config, workflow.source_path("workflow/schemas/config.schema.yaml"))
fc.check_output_dirs("results", "figures")


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/metrics.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        ALL_FIGURES,
        SHORTCUTS,
        REPORT_FILES,


rule alignment:
    input:
        [f for f in ALL_FIGURES if f.startswith("figures/alignment/")],


rule collapse:
    input:
        [f for f in ALL_FIGURES if f.startswith("figures/collapse/")],


rule tangent:
    input:
        [f for f in ALL_FIGURES if f.startswith("figures/tangent/")],


# Once the plan is made and before any job runs (never in a dry run): `device: cuda` needs a GPU here unless a cluster
# executor sends the jobs elsewhere.
onstart:
    fc.check_device(config["device"], workflow.local_exec, gpu_count)
