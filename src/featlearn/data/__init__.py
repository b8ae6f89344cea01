"""Datasets: synthetic generators, torchvision datasets, text corpora and labelled offline stand-ins.

``featlearn.data.prepare`` turns one ``data`` block of a network experiment into the tensors a run trains on.
This package imports nothing itself, so a synthetic-data job never loads torchvision.
"""
