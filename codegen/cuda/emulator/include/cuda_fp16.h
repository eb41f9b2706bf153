// cinn-py CUDA emulator: stands in for CUDA's cuda_fp16.h (the types live in cuda_emu.h).
#pragma once
#include "cuda_emu.h"
