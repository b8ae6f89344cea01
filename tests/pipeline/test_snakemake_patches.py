"""The fence around Snakemake's internals: each patch of ``featlearn.pipeline.snakemake_patches`` checked against the
installed Snakemake, failing with the patch's name and what changed when an upgrade moves what it relies on."""

import base64
import dataclasses
import importlib
import inspect
from pathlib import Path

import pytest
import snakemake

from featlearn.pipeline import snakemake_patches as patches

VERSION = snakemake.__version__


def _resolve(dotted: str):
    """The object a dotted name in Snakemake names (module, then attributes), or None where it is gone."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name, None)
        return obj
    return None


def _fence(patch: str, what: str) -> str:
    return (f"snakemake_patches.{patch}: {what} in Snakemake {VERSION}; the patch relies on it (docs/design.md, "
            "\"Snakemake's internals, fenced\"): adapt the patch, or keep requirements.txt's Snakemake")


def _params(function) -> list[str]:
    return list(inspect.signature(function).parameters)


@pytest.mark.parametrize("patch,target,what", patches.INTERNALS, ids=[f"{p}:{t}" for p, t, _ in patches.INTERNALS])
def test_every_internal_a_patch_relies_on_is_there(patch, target, what):
    attribute = target.rsplit(".", 1)
    found = _resolve(target)
    if found is None and target.endswith(".path"):  # an instance attribute: set in __init__
        found = "self.path" in inspect.getsource(_resolve(attribute[0]).__init__) or None
    owner = _resolve(attribute[0])
    if found is None and dataclasses.is_dataclass(owner):  # a settings field
        found = attribute[1] in {f.name for f in dataclasses.fields(owner)} or None
    assert found is not None, _fence(patch, f"{target} ({what}) is gone")


def test_guard_cache_fetch_and_store_are_coroutines_of_a_job():
    from snakemake.caching.local import OutputFileCache

    for name in ("fetch", "store", "get_outputfiles_and_cachefiles"):
        method = getattr(OutputFileCache, name)
        original = getattr(method, "__wrapped__", method)
        assert inspect.iscoroutinefunction(original) and _params(original) == ["self", "job"], \
            _fence("guard_cache", f"OutputFileCache.{name} is no longer `async def {name}(self, job)`")
    assert _params(OutputFileCache.set_permissions) == ["self", "entry"], \
        _fence("guard_cache", "OutputFileCache.set_permissions is no longer (self, entry)")


def test_guard_cache_replaces_the_store_snakemake_calls(monkeypatch, tmp_path):
    """Snakemake's local executor stores a cached job's outputs through ``rule.cache.store`` ->
    ``workflow.output_file_cache.store``: the class method patched here."""
    from snakemake.caching import rule as cache_rule
    from snakemake.executors import local

    assert "output_file_cache.store(job)" in inspect.getsource(cache_rule), \
        _fence("guard_cache", "the rule's cache no longer calls output_file_cache.store(job)")
    assert "cache.store(job)" in inspect.getsource(local.Executor.acached_or_run), \
        _fence("guard_cache", "the local executor no longer stores through the rule's cache after the job")
    monkeypatch.setenv("SNAKEMAKE_OUTPUT_CACHE", str(tmp_path))
    patches.guard_cache()
    from snakemake.caching.local import OutputFileCache

    assert OutputFileCache().path == tmp_path, _fence("guard_cache", "OutputFileCache().path is not the cache folder")


def test_incomplete_markers_decode_the_paths_snakemake_encodes(tmp_path):
    from snakemake.persistence.file import FilePersistence

    class Stub:
        def _fetch_max_len(self, subject):
            return 16  # short names: the path is cut into several folders, as a long one is under NAME_MAX

    output = "results/smoke/runs/chain_fig1/seed-0.0123456789.pt"
    marker = Path(FilePersistence._record_path(Stub(), str(tmp_path / "incomplete"), output))
    marker.parent.mkdir(parents=True)
    marker.write_text("{}")
    assert patches.incomplete_markers(tmp_path) == {output: marker}, _fence(
        "incomplete_markers", "FilePersistence._record_path no longer writes .snakemake/incomplete/<urlsafe base64 "
        f"cut with '@'> (it wrote {marker.relative_to(tmp_path)})")
    assert base64.urlsafe_b64encode(output.encode()).decode().startswith(marker.relative_to(tmp_path).parts[1][1:])


@pytest.mark.parametrize("argv,expected", [(["snakemake", "-n"], True), (["snakemake", "-np", "all"], True),
                                           (["snakemake", "--dry-run"], True), (["snakemake", "all"], False),
                                           (["/venv/snakemake/__main__.py", "-n"], True), (["python", "-n"], False)])
def test_dry_run_reads_snakemakes_own_command_line(argv, expected):
    assert patches.dry_run(argv) is expected, _fence("dry_run", f"snakemake.cli's parser reads {argv[1:]} otherwise")


class _Workflow:
    """What ``before_planning`` sees of Snakemake's Workflow: settings handed over after parsing, then planning."""

    def __init__(self):
        self.dag_settings = None
        self.planned_with = None

    def _prepare_dag(self, **kwargs):
        self.planned_with = self.dag_settings


def test_before_planning_changes_the_settings_the_api_hands_over_after_parsing():
    from snakemake.api import DAGApi
    from snakemake.workflow import Workflow

    assert "._workflow.dag_settings = self.dag_settings" in inspect.getsource(DAGApi.__post_init__), \
        _fence("before_planning", "DAGApi no longer hands the workflow its DAG settings after parsing")
    source = inspect.getsource(Workflow.execute)
    assert 0 <= source.find("self._prepare_dag(") < source.find("self._build_dag()"), \
        _fence("before_planning", "Workflow.execute no longer plans through self._prepare_dag")


def test_compare_by_content_raises_a_setting_snakemake_reads_when_planning():
    from snakemake.dag import DAG
    from snakemake.settings.types import DAGSettings

    assert "self.workflow.dag_settings.max_checksum_file_size" in inspect.getsource(DAG.__init__), \
        _fence("compare_by_content", "the DAG no longer reads dag_settings.max_checksum_file_size when it is made")
    workflow = _Workflow()
    patches.compare_by_content(workflow)
    workflow.dag_settings = DAGSettings()  # as the API does, after the Snakefile
    workflow._prepare_dag()
    assert workflow.planned_with.max_checksum_file_size == patches.CHECKSUM_BYTES
    workflow.dag_settings = DAGSettings(max_checksum_file_size=5)
    workflow._prepare_dag()
    assert workflow.planned_with.max_checksum_file_size == 5  # the command line's value is kept


def test_rebuild_missing_forces_files_through_a_setting_read_when_the_dag_is_planned(tmp_path):
    from snakemake.settings.types import DAGSettings
    from snakemake.workflow import Workflow

    assert "self.dag_settings.forcerun" in inspect.getsource(Workflow._prepare_dag), \
        _fence("force", "Workflow._prepare_dag no longer reads dag_settings.forcerun")
    (tmp_path / "kept.nc").write_text("")
    workflow = _Workflow()
    forced = patches.rebuild_missing(workflow, [str(tmp_path / "kept.nc"), str(tmp_path / "gone.nc")])
    workflow.dag_settings = DAGSettings(forcerun={"asked.pt"})
    workflow._prepare_dag()
    assert forced == [str(tmp_path / "gone.nc")]
    assert workflow.planned_with.forcerun == {"asked.pt", str(tmp_path / "gone.nc")}


def test_damaged_inputs_read_the_reason_snakemake_gives_a_job():
    from snakemake.dag import DAG
    from snakemake.jobs import Reason

    assert _params(DAG.needrun_jobs) == ["self", "exclude_finished"], \
        _fence("damaged_inputs", "DAG.needrun_jobs is no longer (self, exclude_finished)")
    assert _params(DAG.reason) == ["self", "job"], _fence("damaged_inputs", "DAG.reason is no longer (self, job)")
    assert isinstance(Reason().updated_input, set), _fence("damaged_inputs", "Reason().updated_input is no set")


def test_note_sigterm_wraps_the_handler_the_scheduler_installs_before_onstart():
    from snakemake.scheduling.job_scheduler import JobScheduler
    from snakemake.workflow import Workflow

    assert "signal.signal(signal.SIGTERM, self.exit_gracefully)" in inspect.getsource(JobScheduler.__init__), \
        _fence("note_sigterm", "the JobScheduler no longer installs exit_gracefully for SIGTERM")
    source = inspect.getsource(Workflow.execute)
    assert 0 <= source.find("JobScheduler(") < source.find("self._onstart("), \
        _fence("note_sigterm", "onstart no longer runs after the scheduler is made")


def test_plan_unwritten_replaces_every_check_snakemake_makes_of_a_file():
    from snakemake.dag import DAG
    from snakemake.io import Mtime, _IOFile

    for name, params in (("exists_local", ["self"]), ("mtime_uncached", ["self", "skip_storage"]),
                         ("size_local", ["self"]), ("is_checksum_eligible", ["self", "threshold"])):
        method = getattr(_IOFile, name)
        original = getattr(method, "__wrapped__", method)
        assert inspect.iscoroutinefunction(original) and _params(original) == params, \
            _fence("plan_unwritten", f"_IOFile.{name} is no longer `async def {name}({', '.join(params)})`")
    for caller, callee in (("exists", "exists_local"), ("mtime", "mtime_uncached"), ("size", "size_local")):
        assert f"self.{callee}(" in inspect.getsource(getattr(_IOFile, caller)), \
            _fence("plan_unwritten", f"_IOFile.{caller} no longer goes through {callee}")
    assert "f.is_checksum_eligible(self.max_checksum_file_size)" in inspect.getsource(DAG.update_needrun), \
        _fence("plan_unwritten", "the DAG no longer asks is_checksum_eligible before comparing an input's checksum")
    assert Mtime(local=5.0).local_or_storage(follow_symlinks=True) == 5.0, \
        _fence("plan_unwritten", "Mtime(local=...) no longer reads back as the file's date")
