# Stage 5: the papers' claims checked against the metric stores (results/<scale>/claims/<paper>.json), the claims table
# (markdown and the report's HTML page), the claims blocks of docs/claims.md, and the Snakemake report's global text.
# `snakemake --report report.html` then gives one HTML file: figures, claims, runtimes and provenance. Every rule here
# takes a second or two: on a cluster they run where Snakemake runs (localrule), never as jobs of their own.


report: "../report/workflow.rst"


# The claims of each paper read the stores of PLAN.claim_stores (the experiments config.yaml defines and this machine's
# data reaches). docs/claims.md keeps one claims block per scale of featlearn.claims.report.README_SCALES (quick and
# paper); a rehearsal or a smoke build leaves it alone.


rule claims:
    input:
        stores=lambda w: [PLAN.store_path(e) for e in PLAN.claim_stores[w.paper]],
        stamps=lambda w: [PLAN.spec_stamp(e) for e in PLAN.claim_stores[w.paper]],
        code=lambda w: PLAN.claims_code(w.paper),
    output:
        f"{RESULTS}/claims/{{paper}}.json",
    log:
        f"{RESULTS}/logs/claims/{{paper}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/claims/{{paper}}.tsv"
    wildcard_constraints:
        paper="|".join(PLAN.papers),
    localrule: True
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    params:
        experiments=lambda w: PLAN.claim_stores[w.paper],
        specs=lambda w: {e: PLAN.experiments[e] for e in PLAN.claim_stores[w.paper]},
        scale=TAG,
    script:
        "../scripts/claims.py"


rule claims_table:
    input:
        claims=expand(f"{RESULTS}/claims/{{paper}}.json", paper=PLAN.papers),
        code=deps.job_code("claims_table"),
    output:
        table=f"{RESULTS}/claims/table.md",
        html=report(f"{RESULTS}/claims/claims.html", caption="../report/claims.rst", category="Claims"),
    log:
        f"{RESULTS}/logs/claims/table.log",
    benchmark:
        f"{RESULTS}/benchmarks/claims/table.tsv"
    localrule: True
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/claims_table.py"


# Rewrites only the block between this scale's claims markers of docs/claims.md (the table) and of README.md (its
# summary line): tracked files, so not declared outputs; the stamp records what was written. Run on purpose
# (`snakemake claims_doc`, `--config scale=paper` for the paper block), never by `all`.
rule claims_doc:
    input:
        claims=expand(f"{RESULTS}/claims/{{paper}}.json", paper=PLAN.papers),
        code=deps.job_code("claims_doc"),
    output:
        f"{RESULTS}/claims/doc.stamp",
    log:
        f"{RESULTS}/logs/claims/doc.log",
    benchmark:
        f"{RESULTS}/benchmarks/claims/doc.tsv"
    localrule: True
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    params:
        doc="docs/claims.md",
        readme="README.md",
        figures=PLAN.readme_figures,
    script:
        "../scripts/claims_doc.py"
