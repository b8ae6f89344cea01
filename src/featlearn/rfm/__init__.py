"""Deep Recursive Feature Machines and the kernel machinery of the collapse paper (docs/figures/collapse.md)."""
