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

# Bytecode and pip's own caches only waste layer space.
find "$OUT/python" -type d -name __pycache__ -prune -exec rm -rf {} +
rm -rf "$OUT/python/bin"
echo "layer built: $OUT ($(du -sh "$OUT" | cut -f1))"
