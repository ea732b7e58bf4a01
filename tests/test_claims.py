"""The suite's speed claims as one registry and one runner (python -m benchmarks): every claim listed, one
measured into a record of the contract, and docs/PERFORMANCE.md's claims table as `publish` writes it from the
committed records."""

import json
import subprocess
import sys

import pytest

from benchmarks.claims import SCHEMA, load_all
from tests.conftest import REPO


def _benchmarks(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "benchmarks", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def test_list_names_every_claim_and_the_page_holds_what_publish_writes():
    from benchmarks.claims.publish import UNCOMMITTED, published, table

    listed = _benchmarks("list")
    assert listed.returncode == 0, listed.stderr
    names = load_all().names()
    assert [line.split()[0] for line in listed.stdout.splitlines()[:-1]] == names
    assert listed.stdout.splitlines()[-1] == f"{len(names)} claims"
    assert all(callable(load_all().get(name).function()) for name in names)  # each body is where claims.toml says
    # every claim has a record fit to publish, and the committed table is the one publish writes from them (rows of
    # records measured on uncommitted code marked so)
    assert published() == table(allow_dirty=True)
    dirty = sum(json.loads(path.read_text())["env"]["suite_commit"].endswith("-dirty")
                for path in (REPO / "benchmarks" / "results" / "claims").glob("*/*.json"))
    assert published().count(UNCOMMITTED) == dirty


def _records_to(folder, edit=None, device="cpu", names=None):
    """The committed cpu records (of `names`, or all) copied to folder/<device>/, `edit` applied to each."""
    (folder / device).mkdir(parents=True, exist_ok=True)
    for path in (REPO / "benchmarks" / "results" / "claims" / "cpu").glob("*.json"):
        if names is None or path.stem in names:
            record = json.loads(path.read_text())
            (edit or (lambda _: None))(record)
            (folder / device / path.name).write_text(json.dumps(record))


def _clean(record):
    record["env"]["suite_commit"] = record["env"]["suite_commit"].removesuffix("-dirty")


def _other_sizes(record):
    """A record measured at sizes the claim no longer has: its version is of those sizes."""
    record["sizes"] = {**record["sizes"], "pairs": 1}
    record["claim_version"] = load_all().get(record["claim"]).version(record["sizes"])


@pytest.mark.parametrize("edit, refused", [
    (lambda r: r.pop("schema"), "is of schema 1, not 2"),
    (lambda r: r.update(claim_version="0" * 16), "is of another version of the claim"),  # its body's source changed
    (_other_sizes, "is of another version of the claim"),
    (lambda r: r["env"].update(suite_commit="f" * 40 + "-dirty"), "was measured on uncommitted code"),
    (lambda r: r["quiet"].update(verdict="not quiet"), "is not quiet"),
])
def test_publish_refuses_an_old_schema_another_claim_version_and_uncommitted_code(tmp_path, edit, refused):
    from benchmarks.claims.publish import table
    from l40sbench.errors import UserError

    _records_to(tmp_path, _clean)
    _records_to(tmp_path, lambda r: (_clean(r), edit(r)), names={"jax-step"})
    with pytest.raises(UserError, match=refused) as said:
        table(tmp_path)
    assert str(said.value).startswith("claim jax-step's cpu record ") and "\n" not in str(said.value)
    assert str(said.value).endswith("python -m benchmarks run jax-step")


def test_publish_check_fails_in_one_line_on_a_dirty_or_stale_record(tmp_path):
    _records_to(tmp_path, _clean)
    _records_to(tmp_path, lambda r: (_clean(r), r["env"].update(suite_commit="f" * 40 + "-dirty")), names={"loadgen"})
    checked = _benchmarks("publish", "--check", "--records", tmp_path)
    assert checked.returncode == 2 and checked.stdout == ""
    assert checked.stderr.splitlines() == [
        f"python -m benchmarks: error: claim loadgen's cpu record was measured on uncommitted code ({'f' * 40}-dirty; "
        "--allow-dirty publishes it marked so): measure it again, python -m benchmarks run loadgen"]
    _records_to(tmp_path, lambda r: (_clean(r), r.update(claim_version="0" * 16)), names={"loadgen"})
    stale = _benchmarks("publish", "--check", "--allow-dirty", "--records", tmp_path)
    assert stale.returncode == 2 and "claim loadgen's cpu record is of another version of the claim" in stale.stderr


def test_allow_dirty_publishes_uncommitted_code_marked_so(tmp_path):
    from benchmarks.claims.publish import UNCOMMITTED, table

    _records_to(tmp_path, _clean)
    assert UNCOMMITTED not in table(tmp_path)  # every committed record publishes as a clean tree's would
    _records_to(tmp_path, lambda r: r["env"].update(suite_commit="f" * 40 + "-dirty"), names={"jax-step"})
    marked = table(tmp_path, allow_dirty=True)
    (row,) = [line for line in marked.splitlines() if "run jax-step`" in line]
    assert f"| fffffff, {UNCOMMITTED} |" in row and marked.count(UNCOMMITTED) == 1


@pytest.mark.parametrize("names, key", [
    ((), "cpu"),
    (("NVIDIA L40S",), "gpu-NVIDIA-L40S"),
    (("NVIDIA H100 80GB HBM3",) * 8, "gpu-8x-NVIDIA-H100-80GB-HBM3"),
    (("NVIDIA H100 80GB HBM3 MIG 1g.10gb",), "gpu-NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"),
    (("NVIDIA L40S", "NVIDIA L40S", "NVIDIA RTX A6000"), "gpu-2x-NVIDIA-L40S+NVIDIA-RTX-A6000"),
])
def test_a_claims_device_is_the_drivers_gpus_or_the_cpu(names, key):
    from benchmarks.claims.runner import device_key
    from l40sbench.backends.cuda_driver import CudaDevice

    uuid = "MIG-" if "MIG" in "".join(names) else "GPU-"
    devices = tuple(CudaDevice(i, f"{uuid}{i:08x}-0000-0000-0000-000000000000", name, 46068.0)
                    for i, name in enumerate(names))
    assert device_key(devices) == key


def test_a_gpus_records_publish_beside_the_cpus_in_a_device_column(tmp_path):
    from benchmarks.claims.publish import HEADER, table

    _records_to(tmp_path, _clean)
    _records_to(tmp_path, lambda r: r.update(device="gpu-NVIDIA-L40S", date_utc="2026-12-08"), "gpu-NVIDIA-L40S",
                names={"jax-step", "loadgen"})
    text = table(tmp_path)
    assert "| device |" in HEADER.splitlines()[0]
    for claim in ("jax-step", "loadgen"):
        rows = [line for line in text.splitlines() if f"run {claim}`" in line]
        assert [row.split(" | ")[2] for row in rows] == ["cpu", "gpu-NVIDIA-L40S"]  # the CPU's first, then the GPU's
        assert "2026-12-08" in rows[1]
    missing = tmp_path / "no-home"
    _records_to(missing, _clean)
    (missing / "cpu" / "loadgen.json").rename(missing / "cpu" / "x.txt")
    _records_to(missing, lambda r: r.update(device="gpu-NVIDIA-L40S"), "gpu-NVIDIA-L40S", names={"loadgen"})
    from l40sbench.errors import UserError

    with pytest.raises(UserError, match="claim loadgen has no cpu record"):
        table(missing)


def test_one_claim_measured_quick_is_a_record_of_the_contract_and_not_publishable(tmp_path):
    from benchmarks.claims.publish import table
    from l40sbench.errors import UserError

    done = _benchmarks("run", "interval-cost", "--quick", "--anyway", "--output-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "failed call to cuInit" not in done.stderr  # no driver here: TensorFlow's E line is the gate's to hide
    record = json.loads((tmp_path / "cpu" / "interval-cost.json").read_text())
    assert record["command"] == "python -m benchmarks run interval-cost --quick" and record["quick"]
    assert record["schema"] == SCHEMA and record["device"] == "cpu"
    assert record["claim_version"] == load_all().get("interval-cost").version(record["sizes"])
    assert record["peak"]["matmul"]["float32"]["gflops"] > 0 and record["env"]["suite_commit"]
    assert record["quiet"]["verdict"] in ("quiet", "not quiet")
    for figure in record["figures"].values():
        assert figure["n"] == 2 and len(figure["interval"]) == 2 and figure["value"] > 0
    with pytest.raises(UserError, match="has no cpu record|--quick"):
        table(tmp_path)
    refused = _benchmarks("run", "no-such-claim", "--output-dir", tmp_path)
    assert refused.returncode == 2 and "unknown claim 'no-such-claim'" in refused.stderr


def _claims_by_module() -> dict:
    from benchmarks.claims import load_all

    claims, modules = load_all(), {}
    for name in claims.names():
        modules.setdefault(claims.get(name).body.split(":")[0], []).append(name)
    return modules


@pytest.mark.long
@pytest.mark.parametrize("module", sorted(_claims_by_module()))
def test_every_claim_runs_quick(module, tmp_path):
    """A claim whose code broke is found: each at its --quick sizes (seconds each; those that run a detector or
    a study, a minute or two), one test per module of bodies so that the workers share them."""
    names = _claims_by_module()[module]
    done = _benchmarks("run", *names, "--quick", "--anyway", "--output-dir", tmp_path, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.stem for p in tmp_path.glob("cpu/*.json")) == sorted(names)


def test_a_template_reads_figures_and_labels_and_shows_what_a_quick_run_left_out():
    from benchmarks.claims import Claim
    from benchmarks.claims.figures import figure

    claim = Claim("c", "t", "s", "l", "m:f", "a", "{a:.2f} s ({a.n}; {a.ms:.0f} ms, lowest {a.lowest}), {b.percent:.1f} % "
                  "of {model}; {absent:.1f} {absent.ms:.1f}")
    figures = {"a": figure([1.0, 2.0, 3.0], "s"), "b": figure([0.25], "x"), "labels": {"model": "vgg19"}}
    assert claim.describe(figures) == "2.00 s (3; 2000 ms, lowest 1.0), 25.0 % of vgg19; - -"
    with pytest.raises(KeyError, match="absent"):  # what publish asks: a record that lacks a figure is measured again
        claim.describe(figures, strict=True)


def test_a_claim_runs_functions_and_commands_in_fresh_processes_and_says_why_one_failed(tmp_path, monkeypatch):
    """figures.in_child returns what the function returns, with the environment given; figures.suite runs the CLI
    reading the runner's peak; both raise with the failure's last line."""
    from benchmarks.claims import figures

    assert figures.in_child("os:getenv", "CLAIM_PROBE", env={"CLAIM_PROBE": "set"}) == "set"
    with pytest.raises(RuntimeError, match="os:no_such_function: .*no_such_function"):
        figures.in_child("os:no_such_function")
    kept = tmp_path / "peak.json"
    monkeypatch.setenv(figures.PEAK_VARIABLE, str(kept))
    assert figures.kept_peak() == {"L40SBENCH_PEAK_FILE": str(kept)}
    with pytest.raises(RuntimeError, match="l40sbench classify --base no-such-base: exit 2; its last line: .*no-such"):
        figures.suite(["classify", "--base", "no-such-base"])


def test_a_claim_past_its_limit_is_ended_in_one_line_and_the_others_run(tmp_path, monkeypatch):
    import dataclasses

    from benchmarks.claims import load_all, runner

    claims = load_all()
    hung = dataclasses.replace(claims.get("interval-coverage"), limit_s=0.5)  # its interpreter is still starting
    monkeypatch.setattr(runner, "load_all", lambda: type("Two", (), {"get": staticmethod(
        lambda name: hung if name == hung.name else claims.get(name))}))
    from l40sbench.peak import measure

    monkeypatch.setattr(measure, "measure_env", lambda log: {"matmul": {}})  # the peak is not what is tested here
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")  # the runner's CPU choice sets 3: put back after the test
    said: list[str] = []
    with pytest.raises(runner.ClaimFailed, match=r"1 of 2 claims failed \(interval-coverage\)"):
        runner.run(["interval-coverage", "interval-cost"], True, tmp_path, True, said.append)
    (failed,) = [line for line in said if "failed:" in line]
    assert failed.strip() == ("failed: interval-coverage: no answer within its limit of 0.5 s: ended, with the "
                              "processes it started")
    assert sorted(p.name for p in tmp_path.glob("cpu/*.json")) == ["interval-cost.json"]
