// SPDX-License-Identifier: Apache-2.0
// The test programs' precompiled header (tests/meson.build): GoogleTest and the standard headers
// most test files include, parsed once per program instead of once per file. Only headers that
// do not change with Loom belong here. Each file still includes what it uses: CI's release
// build compiles without precompiled headers (-Db_pch=false), so a missing include fails there.
// (No include guard: GCC compiles this file as a main file.)

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
