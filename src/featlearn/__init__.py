"""featlearn: regenerate the figures of three feature-learning papers as Snakemake targets."""
