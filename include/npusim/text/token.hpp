// What the tokenizer's parts share with its users: an added (special) token of tokenizer.json.
#pragma once

#include <cstdint>
#include <string>

#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI::text {

struct AddedToken {
  std::int64_t id = 0;
  std::string content;
  bool special = false, lstrip = false, rstrip = false, normalized = false, single_word = false;
};

}  // namespace npusim::inline NPUSIM_ABI::text
