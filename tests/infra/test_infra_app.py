"""The app refuses to synthesize a broken deployment, and says why in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infra.app import build_app
from infra.catalog import FUNCTIONS, check_function_folders
from infra.config import InfraConfig, InfraConfigError


def test_a_missing_function_folder_stops_synth_and_names_the_handler_file(asset_tree: Path, tmp_path: Path) -> None:
    functions = tmp_path / "functions"
    shutil.copytree(asset_tree / "functions", functions)
    shutil.rmtree(functions / "governance")
    with pytest.raises(InfraConfigError, match=r"governance/handler\.py"):
        build_app(
            {"functions_root": str(functions), "layer_dir": str(asset_tree / "layer")}, outdir=str(tmp_path / "out")
        )


def test_an_unbuilt_layer_stops_synth_and_says_how_to_build_it(asset_tree: Path, tmp_path: Path) -> None:
    with pytest.raises(InfraConfigError, match=r"layers/build\.sh"):
        build_app(
            {"functions_root": str(asset_tree / "functions"), "layer_dir": str(tmp_path / "nothing")},
            outdir=str(tmp_path / "out"),
        )


def test_an_unknown_database_mode_is_rejected_with_the_allowed_values() -> None:
    with pytest.raises(InfraConfigError, match="aurora, cockroach"):
        InfraConfig.from_mapping({"database": "dynamo"})


def test_numbers_from_the_command_line_are_parsed_and_checked() -> None:
    config = InfraConfig.from_mapping({"cold_archive_after_days": "45", "aurora_max_acu": "4"})
    assert config.cold_archive_after_days == 45 and config.aurora_max_acu == 4.0
    with pytest.raises(InfraConfigError, match="api_rate_limit"):
        InfraConfig.from_mapping({"api_rate_limit": "-1"})


def test_the_function_folder_check_lists_every_missing_handler(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "handler.py").write_text("", encoding="utf-8")
    with pytest.raises(InfraConfigError) as excinfo:
        check_function_folders(tmp_path)
    missing = [spec.name for spec in FUNCTIONS if spec.name != "api"]
    assert all(f"{name}/handler.py" in str(excinfo.value) for name in missing)
