"""SDK releases: recipe data, record identity with the SDK, resume across SDKs, and the report's
changed-first ordering of the side-by-side view."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.helpers import paths
from tests.helpers.records import make_record

from harness.cli import main as hil
from harness.report import write_reports
from harness.report.bundle import BundleError, make_bundle
from harness.report.sdk_matrix import build_sdk_matrix, classify
from harness.results.journal import Journal, finished_ids, read_records, write_run_metadata
from harness.results.records import case_folder, case_key, record_key
from harness.targets.job import Job
from harness.vendors.rknn.documents.compatibility import check_versions
from harness.vendors.rknn.toolkit import sdk
from harness.vendors.rknn.toolkit.calls import key_versions
from harness.vendors.rknn.toolkit.convert import ConversionCache
from harness.vendors.rknn.toolkit.simulator.cache import SimCache
from harness.vendors.rknn.vendor import VENDOR as RKNN

RKNN_FILES = RKNN.bundle_files  # what the RKNN recipe writes into a case folder
INDEX_RELEASES = ("2.2.0", "2.3.0", "2.3.2", "2.5.0")  # rknn-toolkit2 on the package index


# -- recipe data --------------------------------------------------------------------------------


def test_the_shipped_recipes_cover_every_release_on_the_index() -> None:
    recipes = sdk.load_recipes()
    assert tuple(recipes.by_version) == INDEX_RELEASES
    assert recipes.default == "2.5.0"
    for version, recipe in recipes.by_version.items():
        assert recipe.toolkit == f"rknn-toolkit2=={version}"
        names = {p.split("=")[0].split("<")[0] for p in recipe.packages}
        # what the toolkit imports at start-up, measured on every release
        assert {"torch", "protobuf", "setuptools", "onnx", "scipy", "psutil"} <= names
    # 2.2.0 refuses newer onnx; the 2.3 releases were measured with onnx 1.16.1
    assert "onnx==1.14.1" in recipes.get("2.2.0").packages
    assert "onnx==1.16.1" in recipes.get("2.3.2").packages


GOOD = """
default: "2.5.0"
python: "3.11"
harness: [pyyaml]
recipes:
  "2.5.0":
    toolkit: rknn-toolkit2==2.5.0
    packages: [onnx==1.18.0]
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "toolkit: rknn-toolkit2==2.5.0",
            "toolkit: rknn-toolkit2==2.3.2",
            "recipes.2.5.0.toolkit must be 'rknn-toolkit2==2.5.0', got 'rknn-toolkit2==2.3.2'",
        ),
        (
            "packages: [onnx==1.18.0]",
            "packages: []",
            "recipes.2.5.0.packages must be a non-empty list of requirements, got []",
        ),
        (
            "packages: [onnx==1.18.0]",
            "packages: [3]",
            "recipes.2.5.0.packages[0] must be a requirement string, got 3",
        ),
        ('default: "2.5.0"', 'default: "2.4.0"', "default '2.4.0' has no recipe"),
        ('"2.5.0":\n', "2.5:\n", "recipe key 2.5 must be a quoted version string"),
        ("harness: [pyyaml]", "harness: pyyaml", "harness must be a non-empty list"),
        ("    packages:", "    pins: []\n    packages:", "recipes.2.5.0: unknown key(s) pins"),
    ],
)
def test_a_bad_recipe_file_names_the_file_field_and_value(old: str, new: str, message: str) -> None:
    assert old in GOOD
    sdk.parse_recipes(GOOD, "r.yaml")  # the unmodified text is valid
    with pytest.raises(sdk.SdkError) as error:
        sdk.parse_recipes(GOOD.replace(old, new, 1), "r.yaml")
    assert str(error.value).startswith("r.yaml: ")
    assert message in str(error.value)


def test_install_of_a_version_without_recipe_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sdk.SDK_DIR_ENV, str(tmp_path))
    assert hil(["sdk", "install", "2.4.0"]) == 2
    err = capsys.readouterr().err
    assert "'2.4.0' has no install recipe (known: 2.2.0, 2.3.0, 2.3.2, 2.5.0)" in err
    assert list(tmp_path.iterdir()) == []  # nothing half-made


def test_a_release_missing_from_the_index_fails_clearly_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    recipes = sdk.parse_recipes(
        GOOD.replace("2.5.0", "0.0.1").replace("onnx==1.18.0", "numpy"), "r.yaml"
    )
    with pytest.raises(sdk.SdkError) as error:
        sdk.install("0.0.1", tmp_path, say=lambda line: None, recipes=recipes)
    message = str(error.value)
    assert message.startswith("installing rknn-toolkit2==0.0.1 failed (not on the package index):")
    assert "No matching distribution found for rknn-toolkit2==0.0.1" in message  # pip's words
    # no half-made environment left behind, only the version's (unlocked) lock file
    assert [path.name for path in tmp_path.iterdir()] == [".0.0.1.lock"]
    assert sdk.installed(tmp_path) == []


# -- the SDK folder under hostile conditions ------------------------------------------------------

FAKE_INSTALL = """
import json, sys, time
from pathlib import Path
from harness.vendors.rknn.toolkit import sdk

def build(partial, recipe, harness, say):  # a fast stand-in for venv + pip, with a long window
    partial.mkdir()
    time.sleep(1.0)
    (partial / sdk.MANIFEST).write_text(json.dumps({"version": recipe.version, "packages": {}}))

sdk._build = build
root, me, other = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
me.touch()
deadline = time.monotonic() + 60
while not other.exists() and time.monotonic() < deadline:  # start both installs together
    time.sleep(0.01)
recipes = sdk.parse_recipes(sys.argv[4], "r.yaml")
done = sdk.install("9.9.9", root, say=lambda line: print(line, flush=True), recipes=recipes)
print("installed", done.version, done.where)
"""


def test_two_installs_of_one_version_at_once_both_succeed(tmp_path: Path) -> None:
    """The locking is the real one; only the venv build is a fast stand-in."""
    recipes = GOOD.replace("2.5.0", "9.9.9")
    root = tmp_path / "sdk"
    env = {"PYTHONPATH": str(paths.ROOT)}
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                FAKE_INSTALL,
                str(root),
                str(tmp_path / me),
                str(tmp_path / other),
                recipes,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for me, other in (("a", "b"), ("b", "a"))
    ]
    outputs = [child.communicate(timeout=120)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0], outputs
    for output in outputs:
        assert output.splitlines()[-1] == f"installed 9.9.9 {root / '9.9.9'}", output
    said = "".join(outputs)
    assert said.count("creating ") == 1  # one built it, the other waited and found it
    assert "waiting for another install of rknn-toolkit2 9.9.9" in said
    assert "rknn-toolkit2 9.9.9 is already installed" in said
    assert [s.version for s in sdk.installed(root)] == ["9.9.9"]
    assert sorted(path.name for path in root.iterdir()) == [".9.9.9.lock", "9.9.9"]


def test_an_sdk_folder_that_is_a_file_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    afile = tmp_path / "sdk"
    afile.write_text("not a folder\n")
    monkeypatch.setenv(sdk.SDK_DIR_ENV, str(afile))
    for command in (["sdk", "list"], ["sdk", "install", "2.3.2"]):
        assert hil(command) == 2
        err = capsys.readouterr().err
        assert f"{afile}: the SDK folder (env HIL_SDK_DIR) is not a folder" in err
    with pytest.raises(sdk.SdkError, match="is not a folder"):
        sdk.resolve("all")
    assert afile.read_text() == "not a folder\n"


def fake_sdk(root: Path, folder: str, version: str) -> None:
    """An SDK folder as ``hil sdk install`` leaves it, as far as listing it goes."""
    (root / folder).mkdir(parents=True)
    manifest = {"version": version, "packages": {"rknn-toolkit2": version}}
    (root / folder / sdk.MANIFEST).write_text(json.dumps(manifest))


def test_folders_that_are_not_versions_are_ignored_and_said_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_sdk(tmp_path, "2.3.2", "2.3.2")
    fake_sdk(tmp_path, "2.3.2 copy", "2.3.2")  # a copy made in a file manager
    fake_sdk(tmp_path, "2.3.3", "2.3.2")  # renamed: its manifest says otherwise
    assert [found.version for found in sdk.resolve("all", tmp_path)] == ["2.3.2", "2.5.0"]
    err = capsys.readouterr().err
    assert f"npu-hil: ignoring SDK folder {tmp_path / '2.3.2 copy'}: its name is not a" in err
    assert f"{tmp_path / '2.3.3'}: its sdk.json is of rknn-toolkit2 '2.3.2'" in err


def test_a_huge_version_is_not_echoed_back(capsys: pytest.CaptureFixture[str]) -> None:
    huge = "9" * 100_000
    assert hil(["sdk", "install", huge]) == 2
    err = capsys.readouterr().err
    assert "has no install recipe" in err and len(err) < 400
    with pytest.raises(sdk.SdkError) as error:
        sdk.resolve(f"2.5.0,{huge}")
    assert len(str(error.value)) < 400


def test_sdk_list_shows_this_environments_toolkit_and_what_is_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sdk.SDK_DIR_ENV, str(tmp_path))
    (tmp_path / "2.3.2.partial").mkdir()  # an interrupted install is not installed
    assert hil(["sdk", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["toolkit", "numpy", "onnx", "onnxruntime", "torch", "where"]
    assert out[1].split()[0] == "2.5.0" and out[1].endswith("this environment")
    assert out[-1] == "not installed (hil sdk install VERSION): 2.2.0, 2.3.0, 2.3.2"


def test_sdk_option_names_a_missing_release_and_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(sdk.SDK_DIR_ENV, str(tmp_path))
    with pytest.raises(
        sdk.SdkError,
        match=r"rknn-toolkit2 2\.3\.2 not installed .*"
        r"hil sdk install 2\.3\.2",
    ):
        sdk.resolve("2.5.0,2.3.2")
    assert [found.version for found in sdk.resolve("all")] == ["2.5.0"]
    assert [found.version for found in sdk.resolve(" 2.5.0 ")] == ["2.5.0"]


def test_the_simulator_cache_keys_results_by_the_workers_toolkit_and_numpy(tmp_path: Path) -> None:
    job = Job(model=b"onnx", inputs=[np.zeros(3, np.float32)], target_platform="rk3562")
    here = key_versions()
    keys = {SimCache(tmp_path, {**here, "rknn-toolkit2": v}).key(job) for v in INDEX_RELEASES}
    assert len(keys) == len(INDEX_RELEASES)
    # numpy 2.4 fails builds 2.3 completes: a worker on another numpy is another result
    other_numpy = SimCache(tmp_path, {**here, "numpy": "1.26.4"}).key(job)
    assert other_numpy != SimCache(tmp_path, here).key(job)
    assert SimCache(tmp_path).key(job) == SimCache(tmp_path, here).key(job)
    assert sdk.interpreter(None).packages == here


def test_conversions_are_keyed_by_the_converters_packages(tmp_path: Path) -> None:
    job = Job(model=b"onnx", inputs=[np.zeros(3, np.float32)], target_platform="rk3588")
    here = key_versions()
    older = ConversionCache(tmp_path, environment={**here, "numpy": "1.26.4"})
    assert older.key(job) != ConversionCache(tmp_path).key(job)
    assert ConversionCache(tmp_path).toolkit == here["rknn-toolkit2"]


@pytest.mark.parametrize(
    ("toolkit", "library", "flagged"),
    [
        ("2.3.2", "2.3.2 (c949ad889d@2024-11-07T11:35:33)", False),
        ("2.5.0", "2.3.0 (c949ad889d@2024-11-07T11:35:33)", True),
        ("2.5.0", "unknown", False),
    ],
)
def test_a_board_runtime_of_another_release_is_flagged(
    toolkit: str, library: str, flagged: bool
) -> None:
    found = check_versions(toolkit, {"runtime_library": library})
    assert found.errors == []
    assert bool(found.warnings) == flagged
    if flagged:
        assert found.warnings[0].startswith(
            "converted with rknn-toolkit2 2.5.0 for a board runtime library 2.3.0 "
            "(the vendor requires the two to match"
        )


# -- record identity ----------------------------------------------------------------------------


def test_records_of_one_case_on_two_sdks_are_two_records(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.append(make_record("rk3562/Pow/float16/values=0", "violation", sdk="2.3.2"))
    journal.append(make_record("rk3562/Pow/float16/values=0", "violation", sdk="2.5.0"))
    journal.append(make_record("rk3562/Pow/float16/values=0", "confirmed", sdk="2.5.0"))
    records = read_records(tmp_path)
    assert [(r.sdk, r.verdict) for r in records] == [("2.3.2", "violation"), ("2.5.0", "confirmed")]
    assert [record_key(r) for r in records] == [
        "rk3562/Pow/float16/values=0@2.3.2",
        "rk3562/Pow/float16/values=0@2.5.0",
    ]
    # journals written before SDKs were told apart keep the case id as the key
    assert record_key(make_record("x")) == "x"
    assert case_folder("x", "2.3.2") != case_folder("x", "2.5.0")
    assert case_folder("x", "") == "cases/x-11f6ad8e"


def test_an_sdk_that_is_not_a_folder_name_is_refused(tmp_path: Path) -> None:
    Journal(tmp_path).append(make_record("x", sdk="../.."))
    with pytest.raises(ValueError, match=r"sdk"):
        read_records(tmp_path)


def test_resume_skips_by_case_and_sdk(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.append(make_record("a", sdk="2.3.2"))
    journal.append(make_record("a", "infra-error", sdk="2.5.0"))
    journal.append(make_record("b", sdk="2.5.0"))
    assert finished_ids(tmp_path) == {case_key("a", "2.3.2"), case_key("b", "2.5.0")}


def test_bundles_of_two_sdks_do_not_overwrite_each_other(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for version in ("2.3.2", "2.5.0"):
        record = make_record("rk3562/Pow/int8/values=0", "violation", sdk=version)
        folder = tmp_path / case_folder(record.id, version)
        folder.mkdir(parents=True)
        for name in ("model.onnx", "reproduce.py"):
            (folder / name).write_text(f"{name} of {version}\n")
        (folder / "toolkit.json").write_text(json.dumps({"made_by": version}))
        (folder / "inputs").mkdir()  # kept as a user's are: nothing to draw again
        (folder / "inputs" / "0_x.npy").write_text(f"inputs of {version}\n")
        journal.append(dataclasses.replace(record, artifacts=case_folder(record.id, version)))
    with pytest.raises(BundleError, match=r"ran on SDKs 2\.3\.2, 2\.5\.0; choose one with --sdk"):
        make_bundle(tmp_path, "rk3562/Pow/int8/values=0", files=RKNN_FILES)
    old = make_bundle(tmp_path, "rk3562/Pow/int8/values=0", "2.3.2", files=RKNN_FILES)
    new = make_bundle(tmp_path, "rk3562/Pow/int8/values=0", "2.5.0", files=RKNN_FILES)
    assert old != new
    assert (old / "model.onnx").read_text() == "model.onnx of 2.3.2\n"
    assert (new / "model.onnx").read_text() == "model.onnx of 2.5.0\n"


# -- the report: changed limits first -----------------------------------------------------------


def _records() -> list:
    def rec(limit: str, value: str, sdk_: str, verdict: str, detail: str = "") -> object:
        return make_record(
            f"rk3562/Op/float16/{limit}={value}",
            verdict,
            limit=limit,
            value=value,
            sdk=sdk_,
            detail=detail,
        )

    rows = [
        ("A/unchanged", "1", "confirmed", "confirmed"),
        ("B/other", "1", "doc-drift", "confirmed"),
        ("C/build", "1", "confirmed", ("violation", "placement: build failed: RKNN: bad")),
        ("D/wrong", "1", "confirmed", "wrong-result"),
        ("E/fixed", "1", "violation", "confirmed"),
        ("F/enforced", "8193", "limit-confirmed", "doc-drift"),
        ("G/enforced-now", "8193", "doc-drift", "limit-confirmed"),
        ("H/new-violation", "4", "confirmed", ("violation", "placement: CPU fallback")),
    ]
    records = []
    for limit, value, old, new in rows:
        records.append(rec(limit, value, "2.3.2", old))
        verdict, detail = new if isinstance(new, tuple) else (new, "")
        records.append(rec(limit, value, "2.10.0", verdict, detail))  # 2.10 is newer than 2.3
    return records


def test_the_side_by_side_view_puts_changes_first_in_order_of_importance() -> None:
    matrix = build_sdk_matrix(_records())
    assert matrix is not None
    assert matrix.sdks == ["2.3.2", "2.10.0"]
    assert [row.limit for row in matrix.rows] == [
        "F/enforced",  # enforced on 2.3.2, not on 2.10.0
        "E/fixed",  # a violation fixed
        "D/wrong",  # a new wrong result
        "C/build",  # a new build failure
        "H/new-violation",
        "G/enforced-now",
        "B/other",
        "A/unchanged",  # no change: last
    ]
    assert [change.kind for change in matrix.changes] == [
        "no-longer-enforced",
        "violation-fixed",
        "new-wrong-result",
        "new-build-failure",
        "new-violation",
        "newly-enforced",
        "verdict-changed",
    ]
    first = matrix.rows[0].changes[0]
    assert (first.case_id, first.old_sdk, first.new_sdk) == (
        "rk3562/Op/float16/F/enforced=8193",
        "2.3.2",
        "2.10.0",
    )
    assert matrix.rows[-1].counts == {"2.3.2": {"confirmed": 1}, "2.10.0": {"confirmed": 1}}
    assert build_sdk_matrix([r for r in _records() if r.sdk == "2.3.2"]) is None


def test_classify_prefers_the_documented_meaning_of_a_transition() -> None:
    old = make_record("x", "violation", sdk="1")
    assert classify(old, dataclasses.replace(old, verdict="violation")) is None
    assert classify(old, dataclasses.replace(old, verdict="wrong-result")) == "new-wrong-result"
    assert classify(old, dataclasses.replace(old, verdict="limit-confirmed")) == "violation-fixed"


def test_the_report_shows_one_column_per_sdk_and_says_what_it_judges_against(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path)
    for record in _records():
        journal.append(record)
    write_run_metadata(tmp_path, {"documents": "RKNN2 Reference V2.5.0"})
    markdown, html = (path.read_text() for path in write_reports(tmp_path))
    section = markdown.split("## SDK releases side by side")[1].split("\n## ")[0]
    assert "| limit | operator | SDK 2.3.2 | SDK 2.10.0 | changes |" in section
    assert "Every SDK is judged against the same documents: RKNN2 Reference V2.5.0." in section
    assert section.index("F/enforced") < section.index("A/unchanged")
    assert "limit enforced before, no longer: rk3562/Op/float16/F/enforced=8193" in section
    assert "## rk3562 on simulator, SDK 2.3.2" in markdown
    assert "<th>SDK 2.10.0</th>" in html


def test_hil_diff_compares_two_sdks_of_one_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(tmp_path)
    for record in _records():
        journal.append(record)
    assert hil(["diff", str(tmp_path), "--old-sdk", "2.3.2", "--new-sdk", "2.10.0", "--json"]) == 1
    changes = json.loads(capsys.readouterr().out)["changes"]
    verdicts = {c["case_id"]: (c["old"], c["new"]) for c in changes if c["kind"] == "verdict"}
    assert verdicts["rk3562/Op/float16/E/fixed=1"] == ("violation", "confirmed")
    assert len(verdicts) == 7
    assert hil(["diff", str(tmp_path)]) == 2
    assert "one results directory: give --old-sdk and --new-sdk" in capsys.readouterr().err
    other = tmp_path / "other"
    Journal(other).append(make_record("x", sdk="2.5.0"))
    assert hil(["diff", str(tmp_path), str(other)]) == 2
    assert "holds SDKs 2.3.2, 2.10.0: choose one with --old-sdk" in capsys.readouterr().err


# -- a run on two SDKs ----------------------------------------------------------------------------


def test_a_run_on_two_sdks_writes_both_and_resume_skips_per_sdk(
    tmp_path: Path, second_sdk: sdk.Sdk
) -> None:
    other = second_sdk.version  # installed on first use (tests/conftest.py)
    case = "rk3562/Pow/float16/values=4"
    node = f"suites/test_operators.py::test_documented_limit[{case}-sdk{{}}]"
    root = paths.ROOT
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        "-rs",
        "--results",
        str(tmp_path / "results"),
        "--hil-cache",
        "off",
    ]
    first = subprocess.run(
        [*command, "--sdk", "2.5.0", node.format("2.5.0")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stdout + first.stderr
    both = subprocess.run(
        [*command, "--sdk", f"{other},2.5.0", "--resume", node.format(other), node.format("2.5.0")],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert both.returncode == 0, both.stdout + both.stderr
    assert "1 passed, 1 skipped" in both.stdout
    assert "finished on SDK 2.5.0 in an earlier run (--resume)" in both.stdout
    records = read_records(tmp_path / "results")
    assert [(r.sdk, r.versions["rknn_toolkit2"]) for r in records] == [
        ("2.5.0", "2.5.0"),
        (other, other),
    ]
    assert len({r.artifacts for r in records}) == 2


def test_the_slow_tier_is_left_out_by_case_id_under_sdk_too(tmp_path: Path) -> None:
    root = paths.ROOT
    # run for real (a collect-only run writes no run.json): the cheap seq_length cases run
    command = [sys.executable, "-m", "pytest", "suites/test_operators.py", "-q",
               "-p", "no:cacheprovider", "--results", str(tmp_path), "--sdk", "2.5.0",
               "--hil-cache", "off", "-k", "GRU and float16 and seq_length"]  # fmt: skip
    run = subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    ran = {record.id for record in read_records(tmp_path)}
    assert "rk3562/GRU/float16/seq_length=1" in ran
    assert not [case_id for case_id in ran if case_id.endswith(("=8192", "=8193"))]
    left_out = json.loads((tmp_path / "run.json").read_text())["left_out"]
    assert [entry["id"] for entry in left_out] == [
        "rk3562/GRU/float16/seq_length=8192-sdk2.5.0",
        "rk3562/GRU/float16/seq_length=8193-sdk2.5.0",
    ]
