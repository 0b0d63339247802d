// Kernel choice, as oneDNN's implementation lists: for a kernel kind, a type list of candidates,
// the best first and the generic one last. A candidate is a type (one file, or one small struct,
// each; its ISA or vendor `#if` inside it):
//
//   struct ConvDepthwise {
//     static constexpr std::string_view name = "conv_depthwise", what = "one line for explain";
//     static constexpr bool generic = false;  // true only for the last of its list
//     static bool applies(const ConvProblem& p, std::string* why);  // declines with a reason
//     static Fn bind(const ConvBinding& b);                          // what runs
//   };
//
// One generic chooser (`choose<Skip, List>`) walks a list; a target's binder, `npusim explain
// --kernels` and its layout decisions all go through it or name the candidate types, so they cannot
// disagree, and a misspelt candidate does not compile. `check_candidate_list` proves at compile
// time that a list is well formed (unique names, exactly the last one generic). Each target names
// its skip list (`Skip`: NPUSIM_CPU_SKIP, NPUSIM_OPENCL_SKIP), candidates to leave out for
// comparisons and workarounds; a name that is not a candidate, or a generic one (which every
// problem needs), is an error naming the valid ones (check_skipped), not ignored.
#pragma once

#include <concepts>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "npusim/core/error.hpp"
#include "npusim/meta/type_list.hpp"

namespace npusim::inline NPUSIM_ABI::kernel_choice {


// What every candidate type declares, for problems of type Problem.
template <class C, class Problem>
concept Candidate = requires(const Problem& p, std::string* why) {
  { C::name } -> std::convertible_to<std::string_view>;
  { C::what } -> std::convertible_to<std::string_view>;
  { C::generic } -> std::convertible_to<bool>;
  { C::applies(p, why) } -> std::same_as<bool>;
};

// A list is well formed: every member a Candidate, names unique, the last (and only the last)
// generic, so that every problem has a candidate and no better one is unreachable.
template <class Problem, class... Cs>
consteval bool check_candidate_list(meta::list<Cs...>) {
  static_assert(sizeof...(Cs) > 0, "NPUSIM: an empty candidate list");
  static_assert((Candidate<Cs, Problem> && ...),
                "NPUSIM: a candidate lacks name, what, generic or a static bool applies(const Problem&, std::string*)");
  constexpr std::string_view names[] = {Cs::name...};
  constexpr bool generic[] = {Cs::generic...};
  for (std::size_t i = 0; i < sizeof...(Cs); ++i) {
    if (generic[i] != (i + 1 == sizeof...(Cs))) return false;
    for (std::size_t j = 0; j < i; ++j)
      if (names[i] == names[j]) return false;
  }
  return true;
}

// A target's skip list: Skip::env, the environment variable naming candidates to leave out, and
// Skip::target, the target's name in its errors ("CPU", "OpenCL").
template <class S>
concept SkipList = requires {
  { S::env } -> std::convertible_to<const char*>;
  { S::target } -> std::convertible_to<std::string_view>;
};

// The names Skip::env holds, as written (check_skipped validates them).
template <SkipList Skip>
const std::vector<std::string>& skip_env() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    const char* e = std::getenv(Skip::env);
    std::string_view s = e ? e : "";
    while (!s.empty()) {
      const std::size_t comma = s.find(',');
      std::string_view item = s.substr(0, comma);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
      if (!item.empty()) v.emplace_back(item);
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
    return v;
  }();
  return names;
}

// Whether Skip::env leaves candidate C out (read once per candidate).
template <SkipList Skip, class C>
bool skipped() {
  static const bool s = [] {
    for (const auto& n : skip_env<Skip>())
      if (n == C::name) return true;
    return false;
  }();
  return s;
}

// Every name in Skip::env must be a non-generic candidate of one of `lists` (a meta::list of
// candidate lists): otherwise an error naming the valid ones.
template <SkipList Skip, class... Lists>
void check_skipped(meta::list<Lists...>) {
  std::vector<std::pair<std::string_view, bool>> all;  // (name, generic)
  auto add = [&]<class... Cs>(meta::list<Cs...>) { (all.emplace_back(Cs::name, Cs::generic), ...); };
  (add(Lists{}), ...);
  std::string skippable;
  for (const auto& [n, g] : all)
    if (!g) skippable += (skippable.empty() ? "" : ", ") + std::string(n);
  const std::string env = Skip::env, what = std::string(Skip::target) + " kernel candidate";
  for (const std::string& item : skip_env<Skip>()) {
    const std::pair<std::string_view, bool>* found = nullptr;
    for (const auto& c : all)
      if (c.first == item) found = &c;
    if (!found) throw Error(ErrorCode::unsupported, env + " names no " + what, {.expected = "one of " + skippable, .found = item});
    if (found->second)
      throw Error(ErrorCode::unsupported, env + " cannot skip the generic candidate " + item + " (every problem needs it)",
                  {.expected = "one of " + skippable, .found = item});
  }
}

// The outcome of walking a list: the candidate that runs and why each one before it declined.
struct Choice {
  std::string_view chosen;
  std::vector<std::pair<std::string_view, std::string>> declined;  // (candidate, why)
};

// Walks List best first, honouring Skip::env: the index of the first candidate whose
// applies(p, why) says yes (the generic last one always does); with `out`, the reasons of those
// before it (nobody asks on the run-time path, which builds no string).
template <SkipList Skip, class List, class Problem>
std::size_t choose(const Problem& p, Choice* out = nullptr) {
  return [&]<class... Cs>(meta::list<Cs...>) {
    std::size_t i = 0;
    auto one = [&]<class C>() {
      if constexpr (C::generic) {
        if (out) out->chosen = C::name;
        return true;
      } else {
        if (skipped<Skip, C>()) {
          if (out) out->declined.emplace_back(C::name, std::string("skipped by ") + Skip::env);
        } else {
          std::string why;
          if (C::applies(p, out ? &why : nullptr)) {
            if (out) out->chosen = C::name;
            return true;
          }
          if (out) out->declined.emplace_back(C::name, std::move(why));
        }
        ++i;
        return false;
      }
    };
    (one.template operator()<Cs>() || ...);
    return i;
  }(List{});
}

// The type at `index` of List: calls f.template operator()<C>() and returns its result (with
// choose: the binder runs what the chooser picked).
template <class R, class List, class F>
R with_candidate(std::size_t index, F&& f) {
  return meta::dispatch<R>(List{}, index, f);
}

// Whether the candidate chosen at `index` is C (a type, so a misspelt name does not compile).
template <class C, class List>
constexpr bool is(std::size_t index) {
  static_assert(meta::contains_v<C, List>, "NPUSIM: this candidate is not in the list");
  return index == meta::index_of_v<C, List>;
}

// Says why a candidate declines, when someone asks (why != null): a reason, or a callable that
// makes it (so the run-time path, which does not ask, builds no string).
inline bool decline(std::string* why, const char* reason) {
  if (why) *why = reason;
  return false;
}
template <class F>
  requires std::is_invocable_v<F>
bool decline(std::string* why, F&& reason) {
  if (why) *why = reason();
  return false;
}

// (name, what, generic) of every candidate of List, for listings.
struct CandidateInfo {
  std::string_view name, what;
  bool generic = false;
};
template <class List>
std::vector<CandidateInfo> candidate_infos() {
  return []<class... Cs>(meta::list<Cs...>) { return std::vector<CandidateInfo>{{Cs::name, Cs::what, Cs::generic}...}; }(List{});
}

}  // namespace npusim::inline NPUSIM_ABI::kernel_choice
