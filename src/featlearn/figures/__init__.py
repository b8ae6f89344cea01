"""Figure rendering: one module per figure, each with EXPERIMENTS and render(stores, out)."""
