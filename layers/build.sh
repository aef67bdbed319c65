#!/usr/bin/env bash
# Build the ContextOS domain Lambda layer without Docker (STYLE 12).
#
# Usage: layers/build.sh [OUT_DIR]        (default: layers/build, relative to the repo root)
#
# pip downloads manylinux wheels for arm64 / CPython 3.12 (the Lambda runtime), never sdists,
# so nothing is compiled for the build machine; then the domain package is copied beside them.
# Env: PYTHON (default: .venv/bin/python, else python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/layers/build}"
case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
PYTHON="${PYTHON:-}"
if [[ -z "$PYTHON" ]]; then
  if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi
SRC="$ROOT/shared/contextos"
[[ -d "$SRC" ]] || { echo "layers/build.sh: domain package not found at $SRC" >&2; exit 2; }

rm -rf "$OUT"
mkdir -p "$OUT/python"

# manylinux2014 (glibc 2.17) is the baseline; manylinux_2_28 is also accepted because the
# python3.12 runtime runs on Amazon Linux 2023 (glibc 2.34) and some projects (lxml) publish
# newer tags only.
"$PYTHON" -m pip install \
  --disable-pip-version-check --no-input --quiet \
  --platform manylinux2014_aarch64 \
  --platform manylinux_2_28_aarch64 \
  --implementation cp \
  --python-version 3.12 \
  --abi cp312 \
  --only-binary=:all: \
  --target "$OUT/python" \
  -r "$ROOT/layers/requirements.txt"

# The domain package (with its SQL migrations and data files), without bytecode caches.
"$PYTHON" - "$SRC" "$OUT/python/contextos" <<'PY'
import shutil, sys
shutil.copytree(sys.argv[1], sys.argv[2], ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
PY

# pip's own bytecode (compiled by the build machine's Python) and scripts are of no use there.
find "$OUT/python" -type d -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$OUT/python/bin"

# Bytecode for the runtime's Python: /opt is read-only in Lambda, so without it every cold start
# compiles every module it imports. unchecked-hash: a .pyc is used as is, whatever mtimes the
# zip gives the sources. Only a CPython 3.12 writes bytecode 3.12 reads (PYTHON312 to choose one).
is_312() { [[ -n "$1" ]] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }
if ! is_312 "${PYTHON312:-}"; then
  PYTHON312=""
  for candidate in python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python3.12; do
    if is_312 "$candidate"; then PYTHON312="$candidate"; break; fi
  done
fi
if [[ -n "$PYTHON312" ]]; then
  "$PYTHON312" -m compileall -q -j 0 --invalidation-mode unchecked-hash "$OUT/python" >/dev/null \
    || echo "layers/build.sh: some files did not compile (they compile at import instead)" >&2
  echo "layer bytecode: compiled with $("$PYTHON312" -V)"
else
  echo "layers/build.sh: no CPython 3.12 found (set PYTHON312): the layer ships without bytecode" >&2
fi
echo "layer built: $OUT ($(du -sh "$OUT" | cut -f1))"
