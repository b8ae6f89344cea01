# A rehearsal's last stage: every paper job's projected hours, peak memory and disk (featlearn.projection), for all
# figures (results/<scale>-rehearsal/projection.{csv,md}) or one (…/projection/<paper>/fig<N>.{csv,md}). At the paper
# scale itself the rules' resources read results/paper-rehearsal/projection.csv where it exists (common.smk).


def usage_path(stage, experiment, unit):
    return f"{RESULTS}/usage/{stage}/{experiment}/{unit}.{fc.spec_hash(UNITS[experiment][unit])}.json"


def projection_tables(experiments):
    """What the projection script needs of the DAG, for these experiments: both builds' units, their data blocks, the
    figures reading each experiment and the usage record of every rehearsed job."""
    datasets, usage = {}, {}
    for e in experiments:
        for build, units in (("paper", PLANNED_UNITS[e]), ("rehearsal", UNITS[e])):
            for uid, unit in units.items():
                datasets[f"{build}/{e}/{uid}"] = KIND[e].datasets(unit)
        for uid in UNITS[e]:
            for stage in (["train"] if e in TRAINED else []) + ["measure"]:
                usage[f"{stage}/{e}/{uid}"] = usage_path(stage, e, uid)
            for block in KIND[e].datasets(UNITS[e][uid]):
                usage[f"data/{fc.dataset_key(block)}"] = f"{RESULTS}/usage/data/{fc.dataset_key(block)}.json"
    figures = {e: [f"{p}/fig{n}" for (p, n), stores in FIGURE_STORES.items() if e in stores] for e in experiments}
    return {"planned": {e: PLANNED_UNITS[e] for e in experiments}, "rehearsed": {e: UNITS[e] for e in experiments},
            "kinds": {e: EXPERIMENTS[e]["kind"] for e in experiments}, "trained": [e for e in experiments if e in TRAINED],
            "datasets": datasets, "figures": figures, "usage": usage}


def figure_experiments_of(which):
    """The experiments of 'all' figures or of one ('alignment/fig4')."""
    if which == "all":
        return sorted({e for stores in FIGURE_STORES.values() for e in stores if e in EXPERIMENTS})
    paper, n = which.split("/fig")
    return figure_stores(paper, n)


if REHEARSE:

    rule projection:
        output:
            csv=RESULTS + "/projection{which}.csv",
            md=RESULTS + "/projection{which}.md",
        input:
            usage=lambda w: sorted(set(projection_tables(figure_experiments_of(w.which.strip("/") or "all"))["usage"].values())),
            code=deps.job_code("project"),
        params:
            tables=lambda w: projection_tables(figure_experiments_of(w.which.strip("/") or "all")),
            title=lambda w: f"Paper-scale projection from the rehearsal ({w.which.strip('/') or 'all figures'})",
        wildcard_constraints:
            which=r"|/(alignment|collapse|tangent)/fig\d+",
        log:
            RESULTS + "/logs/projection{which}.log",
        resources:
            runtime=request("runtime", "light"),
            mem_mb=request("mem_mb", "light"),
        script:
            "../scripts/project.py"
