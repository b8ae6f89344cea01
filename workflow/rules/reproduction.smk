# Stage 6: whether this build reproduced the published one (featlearn.pipeline.reproduction). `manifest` digests every run
# and store the figures read, and the claims' verdicts; `reproduction_check` holds it to reproduction/<scale>.json,
# the manifest published from a build by `publish_manifest` (run on purpose, like claims_doc, never by `all`).
import os

PUBLISHED_MANIFEST = f"reproduction/{TAG}.json"


rule manifest:
    input:
        files=PLAN.built_files(),  # every run and store the figures read (and this machine's data reaches)
        claims=expand(f"{RESULTS}/claims/{{paper}}.json", paper=PLAN.papers),
        code=deps.job_code("manifest"),
    output:
        f"{RESULTS}/reproduction/manifest.json",
    log:
        f"{RESULTS}/logs/reproduction/manifest.log",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    params:
        scale=TAG,
    script:
        "../scripts/manifest.py"


rule reproduction_check:
    input:
        built=f"{RESULTS}/reproduction/manifest.json",
        published=[PUBLISHED_MANIFEST] if os.path.exists(PUBLISHED_MANIFEST) else [],
        code=deps.job_code("reproduction_check"),
    output:
        summary=f"{RESULTS}/reproduction/check.txt",  # a few lines: what `make figures` prints
        details=f"{RESULTS}/reproduction/check-details.md",  # every differing variable, its gap and tolerance
    log:
        f"{RESULTS}/logs/reproduction/check.log",
    localrule: True
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    params:
        published=PUBLISHED_MANIFEST,
    script:
        "../scripts/reproduction_check.py"


# Writes the tracked reproduction/<scale>.json (not a declared output: the stamp records what was written).
rule publish_manifest:
    input:
        built=f"{RESULTS}/reproduction/manifest.json",
        code=deps.job_code("publish_manifest"),
    output:
        f"{RESULTS}/reproduction/published.stamp",
    log:
        f"{RESULTS}/logs/reproduction/publish.log",
    localrule: True
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    params:
        published=PUBLISHED_MANIFEST,
    script:
        "../scripts/publish_manifest.py"
