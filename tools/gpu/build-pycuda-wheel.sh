#!/usr/bin/env bash
# Build a PyCUDA wheel for another machine's Python (the GPU machines' python3 is 3.12) on a
# machine without a GPU driver: against a CUDA toolkit's headers, linking a stub libcuda.so.1
# that the real driver replaces at load time; CURAND left out (not on the GPU machines' paths).
#     tools/gpu/build-pycuda-wheel.sh PYTHON PYCUDA_SDIST OUT_DIR [CUDA_ROOT]
# PYTHON needs numpy and setuptools (a venv of the target version). Takes ~10 minutes on 2 cores.
set -eu
PY=$1; SDIST=$2; OUT=$3; CUDA_ROOT=${4:-/usr/local/cuda}
WORK=$(mktemp -d)
mkdir -p "$WORK/stub"
echo 'void cuInit(void) {}' > "$WORK/stub/s.c"
gcc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$WORK/stub/libcuda.so" "$WORK/stub/s.c"
tar xzf "$SDIST" -C "$WORK"
cd "$WORK"/pycuda-*
"$PY" configure.py --cuda-root="$CUDA_ROOT" --cudadrv-lib-dir="$WORK/stub" --no-cuda-enable-curand >/dev/null
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$OUT" .
