#!/usr/bin/env bash
# Source on a GPU machine without package registries, from the project root:
#     . tools/gpu/device-setup.sh WHEELS_DIR
# WHEELS_DIR holds islpy, filecheck and PyCUDA's pure-Python needs (mako, platformdirs, pytools,
# siphash24) as wheels, plus either a prebuilt PyCUDA wheel for the machine's Python (cp312 there;
# build it elsewhere with tools/gpu/build-pycuda-wheel.sh) or PyCUDA's source archive, built here
# against the machine's CUDA toolkit when no wheel imports. Installs into /tmp/site and puts it
# and the project root on PYTHONPATH. The machine's own python3 already has numpy, sympy,
# llvmlite, ml_dtypes, torch, cuda-bindings with NVRTC 13 (its headers under nvidia/cu13/include),
# pytest, pytest-xdist, pytest-timeout and hypothesis.
W=${1:?usage: . tools/gpu/device-setup.sh WHEELS_DIR}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site "$W"/*.whl || return 1
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
if ! python3 -c "import pycuda.driver" 2>/dev/null; then
  echo "device-setup: no importable PyCUDA wheel; building it from source"
  rm -rf /tmp/pycuda-src && mkdir -p /tmp/pycuda-src && tar xzf "$W"/pycuda-*.tar.gz -C /tmp/pycuda-src || return 1
  (cd /tmp/pycuda-src/pycuda-* && python3 configure.py --cuda-root="${CUDA_HOME:-/usr/local/cuda}" \
     --no-cuda-enable-curand >/dev/null \
     && python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site .) || return 1
fi
python3 -c "import pycuda.autoprimaryctx, pycuda.driver as d; print('pycuda', d.get_version(), d.Device(0).name())"
