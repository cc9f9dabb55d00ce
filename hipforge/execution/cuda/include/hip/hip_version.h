#pragma once
#include "../hip_nvidia_shim.h"  // HIP_VERSION_*
