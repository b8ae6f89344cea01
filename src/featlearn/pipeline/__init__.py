"""The build: what turns config.yaml into Snakemake jobs and keeps their results honest.

It sits on top of the science (``featlearn.data``, ``models``, ``optim``, ``train``, ``metrics``, ``rfm``,
``claims``, ``figures``), which never imports it (an import contract in ``pyproject.toml``, checked in CI): the
experiments that turn a config into jobs and stores, the jobs' glue (logs, devices, GPU locks, tensor files), the code
inputs Snakemake cannot see, usage records and memory checks (reaching the science through ``featlearn.hooks``),
resources and projections, validation before any job, reruns, and the reproduction manifests.
"""
