#pragma once
#include "../hip_nvidia_shim.h"
#include <cooperative_groups.h>
