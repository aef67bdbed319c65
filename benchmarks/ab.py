"""A/B of one benchmark between two revisions of this repository, on the same machine, back to back.

Each revision is exported (``git archive``) to ``/work/cache/ab/<sha>`` (or ``--cache``) and the
benchmark runs there, with that copy's package first on the path and this virtualenv's Python, so
neither the working tree nor its reports are touched. The rounds alternate which revision goes
first (a moving machine load then weighs on both alike); each run's report is kept, with the load
average before and after it. The A/B report lists every numeric figure of both sides (median over
the rounds) and their ratio head/base, and writes ``benchmarks/reports/ab_<name>.json`` and ``.md``.

Run: ``.venv/bin/python -m benchmarks.ab ingest --base main --head HEAD --rounds 2 -- --existing 20000``
(the arguments after ``--`` go to the benchmark). ``--report NAME`` when the benchmark's report is
named otherwise than the script; ``--dump=FLAG`` to pass each run a file of its own under that flag
(LoCoMo's ``--dump`` rankings), kept beside the reports for comparison; ``--script-from-head`` runs
the head's benchmark script over both revisions' packages (for a figure the base's script did not
report yet). An exported tree has no
dataset folder beside it: LoCoMo benchmarks need ``CONTEXTOS_LOCOMO_DATA`` set to the file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.report import write_report  # noqa: E402


def export(rev: str, cache: Path) -> Path:
    """The revision's tree under ``cache/<sha>`` (exported once)."""
    sha = subprocess.run(["git", "rev-parse", rev], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    target = cache / sha
    if not (target / ".exported").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", sha], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
        (target / ".exported").write_text(sha)
    return target


def run_once(
    tree: Path,
    name: str,
    report: str,
    args: list[str],
    dump: Path | None,
    dump_flag: str | None,
    package: Path | None = None,
) -> dict:
    """One run of ``tree``'s benchmark over ``package`` (default: the tree's own ``shared``)."""
    # GIT_DIR: an exported tree has no history of its own; a benchmark reads past definitions from ours
    shared = package or tree / "shared"
    env = os.environ | {"PYTHONPATH": f"{shared}{os.pathsep}{tree}", "GIT_DIR": str(ROOT / ".git")}
    extra = [dump_flag, str(dump)] if dump is not None and dump_flag else []
    load_before = os.getloadavg()
    started = time.perf_counter()
    subprocess.run([sys.executable, f"benchmarks/{name}.py", *args, *extra], cwd=tree, env=env, check=True)
    elapsed = time.perf_counter() - started
    figures = json.loads((tree / "benchmarks" / "reports" / f"{report}.json").read_text())
    return {
        "figures": figures,
        "seconds": round(elapsed, 1),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def numbers(figures: dict, prefix: str = "") -> dict[str, float]:
    """Every numeric figure of a report, nested keys joined with a dot."""
    out: dict[str, float] = {}
    for key, value in figures.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            out[prefix + key] = float(value)
        elif isinstance(value, dict):
            out |= numbers(value, f"{prefix}{key}.")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", help="the benchmark: benchmarks/<name>.py")
    parser.add_argument("--base", default="main")
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--report", default=None, help="the benchmark's report name (default: its name)")
    parser.add_argument("--dump", default=None, help="a flag of the benchmark taking a file to dump into")
    parser.add_argument("--cache", type=Path, default=Path("/work/cache/ab"))
    parser.add_argument("--out", default=None, help="the A/B report's name (default: ab_<report>)")
    parser.add_argument(
        "--script-from-head",
        action="store_true",
        help="run the head's benchmark over both packages (a figure the base's script does not report)",
    )
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    a = parser.parse_args(argv[:split])
    args = argv[split + 1 :]  # the benchmark's own arguments
    report = a.report or a.name
    trees = {"base": export(a.base, a.cache), "head": export(a.head, a.cache)}
    runs: dict[str, list[dict]] = {"base": [], "head": []}
    for n in range(a.rounds):
        for side in ("base", "head") if n % 2 == 0 else ("head", "base"):
            dump = a.cache / f"{report}_{side}_{n}.dump" if a.dump else None
            print(f"round {n}: {side} ({trees[side].name[:10]})", flush=True)
            tree, package = (trees["head"], trees[side] / "shared") if a.script_from_head else (trees[side], None)
            run = run_once(tree, a.name, report, args, dump, a.dump, package)
            runs[side].append(run | {"dump": str(dump or "")})
    medians = {side: _medians([numbers(r["figures"]) for r in rs]) for side, rs in runs.items()}
    figures = {
        key: {
            "base": medians["base"][key],
            "head": medians["head"][key],
            "head_over_base": round(medians["head"][key] / medians["base"][key], 3) if medians["base"][key] else None,
        }
        for key in sorted(set(medians["base"]) & set(medians["head"]))
    }
    shown = {key: _shown(f) for key, f in figures.items()}
    if a.dump:
        shown |= same_rankings([Path(r["dump"]) for r in runs["base"]], [Path(r["dump"]) for r in runs["head"]])
    out = shown | {
        "benchmark": a.name,
        "arguments": args,
        "base": trees["base"].name,
        "head": trees["head"].name,
        "rounds": a.rounds,
        "runs": {side: [{k: v for k, v in r.items() if k != "figures"} for r in rs] for side, rs in runs.items()},
        "detail": figures,
    }
    notes = [
        f"`python -m benchmarks.ab {a.name} --base {a.base} --head {a.head} --rounds {a.rounds}"
        + (" --script-from-head" if a.script_from_head else "")
        + f" -- {' '.join(args)}`",
        "Both revisions on this machine, back to back, the first side alternating by round; medians over rounds.",
        "Load averages (1, 5, 15 min) before and after each run are in the JSON's runs.",
    ]
    title = f"A/B: {a.name}, {a.base} → {a.head} (median over rounds)"
    write_report(a.out or f"ab_{report}", out, title=title, notes=notes)


def same_rankings(base: list[Path], head: list[Path]) -> dict[str, str]:
    """Per ranking in the dumps (a list of rows, one per question, ranking name → ids), how many
    questions got the same ranking from both sides, compared round by round."""
    same: dict[str, list[int]] = {}
    for b, h in zip(base, head, strict=True):
        for rb, rh in zip(json.loads(b.read_text()), json.loads(h.read_text()), strict=True):
            for key, value in rb.items():
                if isinstance(value, list):
                    counts = same.setdefault(f"same_ranking.{key}", [0, 0])
                    counts[0] += value == rh.get(key)
                    counts[1] += 1
    return {key: f"{n} of {total}" for key, (n, total) in sorted(same.items())}


def _shown(figure: dict) -> str:
    ratio = figure["head_over_base"]
    return f"{figure['base']:g} → {figure['head']:g}" + (f" (×{ratio})" if ratio is not None else "")


def _medians(series: list[dict[str, float]]) -> dict[str, float]:
    keys = set.intersection(*(set(s) for s in series)) if series else set()
    return {k: statistics.median(s[k] for s in series) for k in keys}


if __name__ == "__main__":
    main()
