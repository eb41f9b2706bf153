"""Code generation: the C-family printer base, CUDA C (+ NVRTC, PyCUDA), LLVM IR (llvmlite)."""
