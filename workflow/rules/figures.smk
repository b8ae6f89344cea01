# Stage 4: one PDF per paper figure; figures/figN.pdf is a shortcut to the alignment paper's.


rule figure:
    output:
        report("figures/{paper}/fig{n}.pdf", caption="../report/figure.rst", category="{paper}"),
    input:
        stores=lambda w: [store_path(e) for e in figure_stores(w.paper, w.n)],
        stamps=lambda w: [SCALE_STAMP, *(spec_stamp(e) for e in figure_stores(w.paper, w.n))],
        code=lambda w: figure_code(w.paper, w.n),
    params:
        experiments=lambda w: figure_stores(w.paper, w.n),
        specs=lambda w: {e: EXPERIMENTS[e] for e in figure_stores(w.paper, w.n)},
    wildcard_constraints:
        paper="alignment|collapse|tangent",
        n=r"\d+",
    log:
        RESULTS + "/logs/figures/{paper}/fig{n}.log",
    benchmark:
        RESULTS + "/benchmarks/figures/{paper}/fig{n}.tsv",
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    script:
        "../scripts/render.py"


rule alignment_shortcut:
    output:
        "figures/fig{n}.pdf",
    input:
        "figures/alignment/fig{n}.pdf",
    wildcard_constraints:
        n=r"\d+",
    shell:
        "cp {input} {output}"
