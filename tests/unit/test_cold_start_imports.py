"""What a function's import may not pay for: pydantic-settings (loaded at the first settings read)
and postponed annotations in model modules (pydantic would compile each one at class creation)."""

import subprocess
import sys
from pathlib import Path

import contextos

PACKAGE = Path(contextos.__file__).parent
MODEL_MODULES = [
    "models.py",
    "management_models.py",
    "governance_models.py",
    "config.py",
    "conversations.py",
    "reports.py",
    "workspace/model.py",
]


def test_model_modules_do_not_postpone_annotations():
    postponing = [m for m in MODEL_MODULES if "from __future__ import annotations" in (PACKAGE / m).read_text()]
    assert postponing == []


def test_importing_the_api_loads_no_pydantic_settings_until_settings_are_read():
    probe = (
        "import sys; import contextos.api.app; "
        "print('pydantic_settings' in sys.modules); "
        "from contextos.config import get_settings; get_settings(); "
        "print('pydantic_settings' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "", "PYTHONPATH": str(PACKAGE.parent), "POWERTOOLS_TRACE_DISABLED": "true"},
    )
    assert out.stdout.split() == ["False", "True"]
