"""Datasets: synthetic generators, torchvision datasets, text corpora and labelled offline stand-ins.

``featlearn.data.registry`` is the one table of the datasets a ``data`` block may name (titles, shapes, sizes, files,
loaders, stand-ins). ``featlearn.data.prepare`` turns one ``data`` block of a network experiment into the tensors a
run trains on, through the module of that dataset alone. This package imports and defines nothing, so an edit to a
dataset's module reruns only that dataset's jobs (an edit to the registry, every image dataset's and every figure's).
"""
