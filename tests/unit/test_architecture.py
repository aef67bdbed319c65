"""The layer rules of docs/architecture.md hold: import-linter checks the contracts in .importlinter.

A planted violation in a copy of the package must break its contract, so the check is seen to bite.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=ROOT,
        env={"PYTHONPATH": str(package_parent), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_layer_rule_holds_in_the_package():
    result = lint_imports(ROOT / "shared")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("store/db.py", "import contextos.embedding", "Stores call no model"),
        ("services/keys.py", "import psycopg", "Services reach the database through stores"),
        ("api/auth.py", "import contextos.services.ingestion", "The API reaches services only through"),
        ("normalization.py", "import boto3", "The pure core imports no AWS SDK"),
        ("store/sql.py", "import contextos.services.keys", "Entry points over the composition root"),
        ("services/keys.py", "import contextos.store.keys", "Services reach storage only through the ports"),
        ("ports/keys.py", "import contextos.services.keys", "The ports name no store"),
    ],
)
def test_a_broken_rule_fails_the_check(tmp_path: Path, module: str, line: str, contract: str):
    copy = tmp_path / "contextos"
    shutil.copytree(ROOT / "shared" / "contextos", copy, ignore=shutil.ignore_patterns("__pycache__"))
    planted = copy / module
    planted.write_text(planted.read_text(encoding="utf-8") + f"\n{line}  # planted\n", encoding="utf-8")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert f"{contract}" in result.stdout
    assert "1 broken" in result.stdout
