"""A renter's machine as it fails: a full disk at any save is one line naming the file, what was kept and that
nothing half-written is left (exit 1). Ctrl-C and SIGTERM: tests/test_classify_e2e.py, test_detect_learning.py."""

import errno
import json
import subprocess
import sys

import pytest

from l40sbench.core import records
from tests.conftest import REPO, cli_in_process

TINY = ["classify", "--base", "vgg19", "--image-size", "32", "--limit", "8", "--batch-size", "4", "--epochs", "2",
        "--weights", "none", "--no-bound"]


def _fills_the_disk(path, half: bytes = b"PK\x03\x04 half a model"):
    """What a library does on a full disk: half of the file written, then ENOSPC where it is closed (no name)."""
    with open(path, "wb") as handle:
        handle.write(half)
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_file_a_library_writes_is_whole_or_absent_and_names_itself_when_the_disk_fills(tmp_path):
    target = tmp_path / "model.keras"
    target.write_bytes(b"an earlier run's model")
    with pytest.raises(OSError) as caught, records.written_whole(target) as partial:
        assert partial.name == ".model.partial.keras"  # Keras wants its suffix
        _fills_the_disk(partial)
    assert caught.value.filename == str(target) and records.disk_full(caught.value)
    assert list(tmp_path.iterdir()) == []  # neither half of the new one nor the earlier run's
    with records.written_whole(tmp_path / "saved_model") as partial:  # a folder, as a SavedModel is
        partial.mkdir()
        (partial / "saved_model.pb").write_bytes(b"x")
    assert [p.name for p in tmp_path.iterdir()] == ["saved_model"]
    line = records.full_disk_line(caught.value, tmp_path)
    assert line == (f"the disk is full: {target} was not written, and nothing half-written is left; kept: nothing "
                    "was written before it. Free space and run again")


def test_a_full_disk_at_the_model_save_is_one_line_and_keeps_the_record(tmp_path, monkeypatch):
    import keras

    monkeypatch.setattr(keras.Model, "save", lambda self, path, *a, **k: _fills_the_disk(path))
    out = tmp_path / "run"
    done = cli_in_process(*TINY, "--output-dir", out)
    assert done.returncode == 1, done.stderr[-3000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"l40sbench: error: the disk is full: {out / 'model.keras'} was not written, and nothing "
                    f"half-written is left; kept: {out / 'result.json'} (2 finished epoch(s), complete: true). Free "
                    "space and run again"), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["result.csv", "result.json"]  # no model, no half of one
    assert json.loads((out / "result.json").read_text())["train"]["epochs"] == 2


@pytest.mark.long
@pytest.mark.parametrize("size, stopped_at, epochs", [("12k", "result.csv", 0), ("300k", "model.keras", 2)])
def test_a_really_full_filesystem_ends_a_run_in_one_line(tmp_path, size, stopped_at, epochs):
    """A 12 KB and a 300 KB tmpfs as --output-dir (where this host lets a test mount one): the first fills at the
    first record's CSV, the second at the model."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("this host does not let a test mount a tmpfs")
    try:
        done = subprocess.run([sys.executable, "-m", "l40sbench", *TINY, "--output-dir", str(mount / "run")],
                              cwd=REPO, capture_output=True, text=True, timeout=600)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"l40sbench: error: the disk is full: {mount / 'run' / stopped_at} was not written")
        assert f"({epochs} finished epoch(s)" in last
        assert not any(p.name.startswith(".") or p.name == "model.keras" for p in (mount / "run").iterdir())
    finally:
        subprocess.run(["umount", str(mount)], check=False)
