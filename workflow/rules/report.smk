# Stage 5: the papers' claims checked against the metric stores (results/claims/<paper>.json), the claims table
# (markdown and the report's HTML page), the README's claims block, and the Snakemake report's global text.
# `snakemake --report report.html` then gives one HTML file: figures, claims, runtimes and provenance.


report: "../report/workflow.rst"


PAPERS = list(FIGURE_NUMBERS)


def claim_stores(paper):
    """The STORES literal of a claims module, read without importing it (xarray would add a second to every DAG
    build); only experiments config.yaml defines: the others' claims are reported as not measured."""
    tree = ast.parse(open(f"{SRC}claims/{paper}.py").read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "STORES":
            return [e for e in ast.literal_eval(node.value) if e in EXPERIMENTS]
    raise ValueError(f"{SRC}claims/{paper}.py defines no STORES tuple")


CLAIM_STORES = {paper: claim_stores(paper) for paper in PAPERS}
CLAIMS_SOURCES = sources(*(f"claims/{m}.py" for m in ("__init__", "core", *PAPERS)), "store.py")
# What the report shows besides the figures; the `all` rule lists them so that `snakemake --report` finds them.
REPORT_FILES = ["results/claims/table.md", "results/claims/claims.html"]
README_SCALE = "quick"  # the README shows the quick scale's claims; other scales leave it alone


rule claims:
    output:
        "results/claims/{paper}.json",
    input:
        stores=lambda w: [store_path(e) for e in CLAIM_STORES[w.paper]],
        code=CLAIMS_SOURCES,
    params:
        experiments=lambda w: CLAIM_STORES[w.paper],
    wildcard_constraints:
        paper="|".join(PAPERS),
    log:
        "results/logs/claims/{paper}.log",
    benchmark:
        "results/benchmarks/claims/{paper}.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/claims.py"


rule claims_table:
    output:
        table="results/claims/table.md",
        html=report("results/claims/claims.html", caption="../report/claims.rst", category="Claims"),
    input:
        claims=expand("results/claims/{paper}.json", paper=PAPERS),
        code=sources("claims/core.py", "claims/report.py"),
    log:
        "results/logs/claims/table.log",
    benchmark:
        "results/benchmarks/claims/table.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/claims_table.py"


# Rewrites only the block between the claims markers of README.md (a tracked file, so not a declared output: the
# stamp records what was written). Run on purpose (`snakemake readme_claims`), never by `all`.
rule readme_claims:
    output:
        "results/claims/readme.stamp",
    input:
        table="results/claims/table.md",
        code=sources("claims/report.py"),
    params:
        readme="README.md",
        readme_scale=README_SCALE,
    log:
        "results/logs/claims/readme.log",
    benchmark:
        "results/benchmarks/claims/readme.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/readme_claims.py"
