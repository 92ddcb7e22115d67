// SPDX-License-Identifier: Apache-2.0
// abi_facts.inc over Loom's declaration of the NCCL ABI.
#include "nccl/nccl_abi.h"

#define CONFIG_INITIALIZER LOOM_NCCL_CONFIG_INITIALIZER
#define SIM_INFO_INITIALIZER LOOM_NCCL_SIM_INFO_INITIALIZER
#define COLLECT_FUNCTION_NAME loomAbiFacts
#include "tests/nccl/abi_facts_collect.h"
