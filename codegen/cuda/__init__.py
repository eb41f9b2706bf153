"""CUDA backend: CUDA C printer, NVRTC compilation, device runtime header, PyCUDA kernels."""
