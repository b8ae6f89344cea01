# Stage 4: one PDF per paper figure, under figures/<tag>/ (the scale, or '<scale>-rehearsal'); figures/figN.pdf is
# a shortcut to the configured scale's alignment figure. Every rule here takes seconds: on a cluster they run where
# Snakemake runs (localrule), never as jobs of their own.


rule figure:
    input:
        stores=lambda w: [PLAN.store_path(e) for e in PLAN.figure_stores(w.paper, w.n)],
        stamps=lambda w: [PLAN.spec_stamp(e) for e in PLAN.figure_stores(w.paper, w.n)],
        code=lambda w: PLAN.figure_code(w.paper, w.n),
    output:
        # the report groups figures by paper (category) and figure (subcategory; zero-padded, as the report sorts
        # them as text)
        report(
            f"{FIGURES}/{{paper}}/fig{{n}}.pdf",
            caption="../report/figure.rst",
            category="{paper}",
            subcategory=lambda w: f"Fig {int(w.n):02d}",
            labels={"paper": "{paper}", "figure": "Fig {n}", "scale": TAG},
        ),
    log:
        f"{RESULTS}/logs/figures/{{paper}}/fig{{n}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/figures/{{paper}}/fig{{n}}.tsv"
    wildcard_constraints:
        paper="alignment|collapse|tangent",
        n=r"\d+",
    localrule: True
    resources:
        runtime=request("runtime", "light"),
        mem_mb=request("mem_mb", "light"),
    params:
        scale=TAG,
        experiments=lambda w: PLAN.figure_stores(w.paper, w.n),
        specs=lambda w: {e: PLAN.experiments[e] for e in PLAN.figure_stores(w.paper, w.n)},
    script:
        "../scripts/render.py"


if not REHEARSE:  # a rehearsal's figure never stands where a real one is looked for

    rule alignment_shortcut:
        input:
            figure=f"{FIGURES}/alignment/fig{{n}}.pdf",
            stamp=planning.SCALE_STAMP,
        output:
            "figures/fig{n}.pdf",
        wildcard_constraints:
            n=r"\d+",
        localrule: True
        shell:
            "cp {input.figure} {output}"

    # figures/<paper>/figN.pdf (docs/design.md, Targets): the configured scale's figure, copied from its own folder
    rule figure_shortcut:
        input:
            figure=f"{FIGURES}/{{paper}}/fig{{n}}.pdf",
            stamp=planning.SCALE_STAMP,
        output:
            "figures/{paper}/fig{n}.pdf",
        wildcard_constraints:
            paper="alignment|collapse|tangent",
            n=r"\d+",
        localrule: True
        shell:
            "cp {input.figure} {output}"
