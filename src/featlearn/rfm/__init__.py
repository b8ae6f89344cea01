"""Deep Recursive Feature Machines and the kernel machinery of the collapse paper (collapse spec §2.3)."""
