#pragma once
#include "../hip_nvidia_shim.h"
#include "../hip_nvidia_half.h"
