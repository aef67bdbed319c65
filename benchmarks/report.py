"""Every benchmark writes ``benchmarks/reports/<name>.json`` (figures) beside ``<name>.md`` (readable)."""

from __future__ import annotations

import json
import os
import platform
from datetime import UTC, datetime
from pathlib import Path

REPORTS = Path(__file__).resolve().parent / "reports"


def machine() -> dict:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "when": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def write_report(name: str, figures: dict, *, title: str, notes: list[str]) -> Path:
    """Write the figures (flat numbers first) and a markdown table of them; return the JSON path."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    payload = {**figures, "machine": machine()}
    json_path = REPORTS / f"{name}.json"
    json_path.write_text(json.dumps(payload, indent=2) + "\n")
    lines = [f"# {title}", "", "| figure | value |", "|---|---|"]
    lines += [f"| `{k}` | {v} |" for k, v in figures.items() if isinstance(v, int | float | str)]
    lines += ["", *[f"- {n}" for n in notes], "", f"Machine: {payload['machine']}", ""]
    (REPORTS / f"{name}.md").write_text("\n".join(lines))
    return json_path
