# Stage 4: one PDF per paper figure, under figures/<tag>/ (the scale, or '<scale>-rehearsal'); figures/figN.pdf is
# a shortcut to the configured scale's alignment figure.


rule figure:
    output:
        report(FIGURES + "/{paper}/fig{n}.pdf", caption="../report/figure.rst", category="{paper}"),
    input:
        stores=lambda w: [store_path(e) for e in figure_stores(w.paper, w.n)],
        stamps=lambda w: [spec_stamp(e) for e in figure_stores(w.paper, w.n)],
        code=lambda w: figure_code(w.paper, w.n),
    params:
        scale=TAG,
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


if not REHEARSE:  # a rehearsal's figure never stands where a real one is looked for

    rule alignment_shortcut:
        output:
            "figures/fig{n}.pdf",
        input:
            figure=FIGURES + "/alignment/fig{n}.pdf",
            stamp=SCALE_STAMP,
        wildcard_constraints:
            n=r"\d+",
        shell:
            "cp {input.figure} {output}"

    # figures/<paper>/figN.pdf (the targets DESIGN.md names): the configured scale's figure, copied from its own folder
    rule figure_shortcut:
        output:
            "figures/{paper}/fig{n}.pdf",
        input:
            figure=FIGURES + "/{paper}/fig{n}.pdf",
            stamp=SCALE_STAMP,
        wildcard_constraints:
            paper="alignment|collapse|tangent",
            n=r"\d+",
        shell:
            "cp {input.figure} {output}"
