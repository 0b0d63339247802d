// npusim version. CMake parses the three NPUSIM_VERSION_* lines; the inline namespace is derived
// from major/minor so that objects built against different minor versions do not link together.
#pragma once

#define NPUSIM_VERSION_MAJOR 0
#define NPUSIM_VERSION_MINOR 1
#define NPUSIM_VERSION_PATCH 0

#define NPUSIM_ABI_CONCAT_(a, b) v##a##_##b
#define NPUSIM_ABI_CONCAT(a, b) NPUSIM_ABI_CONCAT_(a, b)
#define NPUSIM_ABI NPUSIM_ABI_CONCAT(NPUSIM_VERSION_MAJOR, NPUSIM_VERSION_MINOR)

namespace npusim::inline NPUSIM_ABI {
inline constexpr int version_major = NPUSIM_VERSION_MAJOR;
inline constexpr int version_minor = NPUSIM_VERSION_MINOR;
inline constexpr int version_patch = NPUSIM_VERSION_PATCH;
inline constexpr const char* version_string = "0.1.0";
}  // namespace npusim::inline NPUSIM_ABI
