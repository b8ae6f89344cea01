"""Figures of "Feature learning as alignment" (TMLR numbering), one module per figure.

One module per figure (not one per paper) so that Snakemake, which tracks files, reruns only
the figure whose code changed.
"""
