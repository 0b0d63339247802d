// `npusim ops --markdown`: docs/operators.md, generated from the op registry (ops::op_infos), the
// fusion patterns (fusion::all_patterns) and the CLI's target registry (targets.hpp), so the page
// cannot drift from the code. A test (cli.operators_doc) regenerates it and compares.
// Only build-independent facts go in: no version, no machine, no timing.
#pragma once

#include <charconv>
#include <map>
#include <sstream>
#include <string>

#include "targets.hpp"

namespace npusim::cli {

namespace detail {

// A markdown table cell: pipes escaped, empty shown as a dash.
std::string cell(std::string s);

std::string code(std::string_view s);

// Attribute defaults are printed to round-trip (0.10000000000000001); the docs show the shortest
// form that reads back as the same double (0.1), still marked as a float.
std::string shortest_double(const std::string& v);

struct PatternDoc {
  std::string_view name, summary;
};

std::vector<PatternDoc> pattern_docs();

}  // namespace detail

std::string ops_markdown();

}  // namespace npusim::cli
