# Stage 6: whether this build reproduced the published one (featlearn.pipeline.reproduction). `manifest` digests every run
# and store the figures read, and the claims' verdicts; `reproduction_check` holds it to reproduction/<scale>.json,
# the manifest published from a build by `publish_manifest` (run on purpose, like readme_claims, never by `all`).
import os

# Every run and store of the experiments the figures read (and this machine's data reaches), unit stores included.
BUILT_EXPERIMENTS = [e for e in figure_experiments_of(None) if e not in UNREACHABLE]
BUILT_FILES = [
    *[run_path(e, u) for e in BUILT_EXPERIMENTS if e in TRAINED for u in UNITS[e]],
    *[unit_store_path(e, u) for e in BUILT_EXPERIMENTS for u in UNITS[e]],
    *[store_path(e) for e in BUILT_EXPERIMENTS],
]
PUBLISHED_MANIFEST = f"reproduction/{TAG}.json"


rule manifest:
    input:
        files=BUILT_FILES,
        claims=expand(f"{RESULTS}/claims/{{paper}}.json", paper=PAPERS),
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
        f"{RESULTS}/reproduction/check.txt",
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
