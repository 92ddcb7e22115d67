// SPDX-License-Identifier: Apache-2.0
// abi_facts.inc over the CUDA toolkit's nccl.h (built only where the toolkit has one).
#include <nccl.h>

// nccl.h marks ncclResetDebugInit deprecated; its type is still part of the ABI checked here.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define CONFIG_INITIALIZER NCCL_CONFIG_INITIALIZER
#define SIM_INFO_INITIALIZER NCCL_SIM_INFO_INITIALIZER
#define COLLECT_FUNCTION_NAME toolkitAbiFacts
#include "tests/nccl/abi_facts_collect.h"
