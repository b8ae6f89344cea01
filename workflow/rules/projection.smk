# A rehearsal's last stage: every paper job's projected hours, peak memory and disk (featlearn.pipeline.projection), for all
# figures (results/<scale>-rehearsal/projection.{csv,md}) or one (…/projection/<paper>/fig<N>.{csv,md}). At the paper
# scale itself the rules' resources read results/paper-rehearsal/projection.csv where it exists
# (featlearn.pipeline.planning).
# The rule takes seconds: on a cluster it runs where Snakemake runs (localrule).


if REHEARSE:

    rule projection:
        input:
            usage=lambda w: sorted(set(projection_tables(w)["usage"].values())),
            code=deps.job_code("project"),
        output:
            csv=f"{RESULTS}/projection{{which}}.csv",
            md=f"{RESULTS}/projection{{which}}.md",
        log:
            f"{RESULTS}/logs/projection{{which}}.log",
        wildcard_constraints:
            which=r"|/(alignment|collapse|tangent)/fig\d+",
        localrule: True
        resources:
            runtime=request("runtime", "light"),
            mem_mb=request("mem_mb", "light"),
        params:
            tables=projection_tables,
            title=lambda w: f"Paper-scale projection from the rehearsal ({planning.projection_figure(w.which) or 'all figures'})",
        script:
            "../scripts/project.py"
