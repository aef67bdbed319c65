"""The app refuses to synthesize a broken deployment, and says why in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infra.app import STACK_NAME, build_app
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


def test_the_real_functions_tree_matches_the_catalog_and_synthesizes_in_both_modes(
    asset_tree: Path, tmp_path: Path
) -> None:
    """The deployable tree: every catalog function has its handler (with ``lambda_handler``), no
    folder is left out of the catalog, and the app synthesizes from it (the layer is a stand-in)."""
    import ast

    functions_root = Path(__file__).resolve().parents[2] / "functions"
    folders = {p.parent.name for p in functions_root.glob("*/handler.py")}
    assert folders == {spec.name for spec in FUNCTIONS}
    for name in folders:
        tree = ast.parse((functions_root / name / "handler.py").read_text(encoding="utf-8"))
        assert "lambda_handler" in {
            node.name if isinstance(node, ast.FunctionDef) else getattr(node.targets[0], "id", "")
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.Assign)
        }, f"functions/{name}/handler.py defines no lambda_handler"
    for mode in ("aurora", "cockroach"):
        app, _ = build_app(
            {
                "functions_root": str(functions_root),
                "layer_dir": str(asset_tree / "layer"),
                "console_dir": str(asset_tree / "console"),
                "database": mode,
            },
            outdir=str(tmp_path / mode),
        )
        app.synth()
        assert (tmp_path / mode / f"{STACK_NAME}.template.json").is_file()
