"""Figures of "An Adaptive Tangent Feature Perspective of Neural Networks", one module per figure.

Figs 1 and 3 read the MNIST 2-vs-3 store (kind ``tangent_mnist``), Fig 2 the penalty curves
(featlearn.pipeline.experiments.tangent_penalties.penalties_store).
"""
