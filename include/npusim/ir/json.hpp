// The one place that parses JSON (nlohmann): a nesting-depth guard before parsing, parse errors
// converted to npusim::Error with the byte offset, and small typed accessors with clear messages.
// Headers that only name ir::json in declarations include ir/json_fwd.hpp instead.
#pragma once

#include <nlohmann/json.hpp>

#include "npusim/ir/json_fwd.hpp"

#ifndef NPUSIM_COMPILED_LIB
#include "npusim/ir/impl/json_inl.hpp"
#endif
