"""The domain layer is built for the Lambda (arm64, CPython 3.12) and carries a working `contextos`.

The build runs once per session into a temp dir with `layers/build.sh` (pip from PyPI, about
ten seconds with a warm cache). This machine is x86_64 with Python 3.11, so the import check runs
the layer's pure-Python code for real and swaps in the host's builds of the very same versions
of the few compiled packages; anything compiled that is not swapped stays aarch64 and cannot load,
so an unexpected compiled import fails the test instead of passing by accident.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
from email.parser import Parser
from pathlib import Path

import pytest

from infra.config import REPO_ROOT

EM_AARCH64 = 183  # ELF e_machine for AArch64
# CPython 3.12 wheels, or stable-ABI (abi3) wheels built for 3.12 or older, which 3.12 loads.
WHEEL_TAG = re.compile(r"^(cp312-cp312|cp3(?:[2-9]|1[0-2])-abi3)-manylinux\w*_aarch64$")


@pytest.fixture(scope="session")
def layer_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the real layer once (the same script `make layer` runs) and return its python/ dir."""
    out = tmp_path_factory.mktemp("layer") / "build"
    result = subprocess.run(
        ["bash", str(REPO_ROOT / "layers" / "build.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHON": sys.executable},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return out / "python"


def wheel_metadata(dist_info: Path) -> dict[str, list[str]]:
    message = Parser().parsestr((dist_info / "WHEEL").read_text(encoding="utf-8"))
    return {key: message.get_all(key) or [] for key in ("Tag", "Root-Is-Purelib")}


def compiled_dists(layer: Path) -> dict[str, Path]:
    """Distribution name → dist-info for every platform-specific wheel in the layer."""
    found = {}
    for dist_info in layer.glob("*.dist-info"):
        if wheel_metadata(dist_info)["Root-Is-Purelib"] == ["false"]:
            found[dist_info.name.split("-")[0].lower().replace("_", "-")] = dist_info
    return found


def elf_machine(path: Path) -> int | None:
    with path.open("rb") as handle:
        header = handle.read(20)
    if header[:4] != b"\x7fELF":
        return None
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")


def test_the_layer_has_the_compiled_wheels_the_domain_needs(layer_python: Path) -> None:
    assert {"psycopg-binary", "pydantic-core"} <= set(compiled_dists(layer_python))


def test_every_compiled_wheel_is_tagged_for_cpython_312_on_manylinux_aarch64(layer_python: Path) -> None:
    for name, dist_info in compiled_dists(layer_python).items():
        tags = wheel_metadata(dist_info)["Tag"]
        assert tags and all(WHEEL_TAG.match(tag) for tag in tags), (name, tags)


def test_every_shared_library_in_the_layer_is_an_aarch64_elf(layer_python: Path) -> None:
    libraries = [p for p in layer_python.rglob("*.so*") if p.is_file()]
    assert any("pydantic_core" in str(p) for p in libraries)
    assert any("psycopg_binary" in str(p) for p in libraries)
    wrong = [str(p) for p in libraries if elf_machine(p) not in (None, EM_AARCH64)]
    assert wrong == []
    assert not [p for p in libraries if "x86_64" in p.name]


def test_the_layer_ships_the_domain_package_with_bytecode_for_the_runtime_only(layer_python: Path) -> None:
    assert (layer_python / "contextos" / "__init__.py").is_file()
    source_sql = sorted(
        p.relative_to(REPO_ROOT / "shared") for p in (REPO_ROOT / "shared" / "contextos").rglob("*.sql")
    )
    shipped_sql = sorted(p.relative_to(layer_python) for p in (layer_python / "contextos").rglob("*.sql"))
    assert shipped_sql == source_sql
    # /opt is read-only in Lambda: bytecode the runtime (CPython 3.12) reads, for every module,
    # hash-based and never checked against the source (flags 0b01), so zip mtimes cannot void it;
    # none written by the build machine's own Python.
    assert not [p for p in layer_python.rglob("*.pyc") if ".cpython-312." not in p.name]
    modules = list((layer_python / "contextos").rglob("*.py"))
    bytecode = list((layer_python / "contextos").rglob("*.cpython-312.pyc"))
    assert len(bytecode) == len(modules)
    assert {int.from_bytes(p.read_bytes()[4:8], "little") for p in bytecode} == {1}


def host_twins(layer: Path, shims: Path) -> list[str]:
    """Link the host's build of each compiled package into `shims` when its version matches."""
    linked = []
    for dist, dist_info in compiled_dists(layer).items():
        version = dist_info.name[: -len(".dist-info")].split("-", 1)[1]
        try:
            if importlib.metadata.version(dist) != version:
                continue
        except importlib.metadata.PackageNotFoundError:
            continue
        for top in (
            (dist_info / "top_level.txt").read_text().split()
            if (dist_info / "top_level.txt").is_file()
            else [dist.replace("-", "_")]
        ):
            spec = importlib.util.find_spec(top)
            if spec is None or spec.origin is None:
                continue
            package_dir = Path(spec.origin).parent
            (shims / top).symlink_to(package_dir, target_is_directory=True)
            libs = package_dir.with_name(f"{top}.libs")
            if libs.is_dir():
                (shims / libs.name).symlink_to(libs, target_is_directory=True)
            linked.append(top)
    return linked


IMPORT_PROBE = """
import sys
layer, shims = sys.argv[1], sys.argv[2]
sys.path[:0] = [shims, layer]
import contextos, contextos.settings, pydantic, pydantic_settings
settings = contextos.settings.Settings()
assert contextos.__file__.startswith(layer), contextos.__file__
assert pydantic.__file__.startswith(layer), pydantic.__file__
assert pydantic_settings.__file__.startswith(layer), pydantic_settings.__file__
print("ok", type(settings).__name__)
"""


def test_contextos_config_imports_from_the_layer_alone(layer_python: Path, tmp_path: Path) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    linked = host_twins(layer_python, shims)
    assert "pydantic_core" in linked, "the host venv needs the layer's pydantic-core version"
    # -I: no user site, no PYTHON* env, no script dir; -S: no site-packages at all.
    env = {"PATH": os.environ.get("PATH", ""), "CONTEXTOS_DATABASE_DIALECT": "postgres"}
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", IMPORT_PROBE, str(layer_python), str(shims)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.startswith("ok Settings")
