// One exception type for every runtime failure. It carries what went wrong and where (file, node,
// tensor, byte offset) plus expected-vs-found, so that a user can fix the input without a debugger.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "npusim/core/printable.hpp"
#include "npusim/version.hpp"

namespace npusim::inline NPUSIM_ABI {

enum class ErrorCode {
  io,           // file cannot be opened, read, mapped or written
  parse,        // malformed JSON / safetensors / npubin bytes
  graph,        // IR structure: missing producer, order, duplicate names
  unknown_op,   // op type not in the registry
  attr,         // attribute missing, of the wrong type, or a value we do not implement
  shape,        // shape mismatch or invalid shape
  dtype,        // dtype mismatch or unsupported dtype
  weights,      // missing or inconsistent weights
  resource,     // a limit was hit before any large allocation (sizes, depth, positions)
  unsupported,  // valid input that this build cannot run
  runtime,      // failure while executing (device errors, ...)
  check,        // results outside tolerance
};

inline const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::io: return "io";
    case ErrorCode::parse: return "parse";
    case ErrorCode::graph: return "graph";
    case ErrorCode::unknown_op: return "unknown-op";
    case ErrorCode::attr: return "attr";
    case ErrorCode::shape: return "shape";
    case ErrorCode::dtype: return "dtype";
    case ErrorCode::weights: return "weights";
    case ErrorCode::resource: return "resource";
    case ErrorCode::unsupported: return "unsupported";
    case ErrorCode::runtime: return "runtime";
    case ErrorCode::check: return "check";
  }
  return "error";
}

struct ErrorContext {
  std::string file{};
  std::string node{};
  std::string tensor{};
  std::optional<std::uint64_t> offset{};
  std::string expected{};
  std::string found{};
};

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, std::string message, ErrorContext ctx = {})
      : std::runtime_error(std::string()), code_(code), message_(std::move(message)), ctx_(std::move(ctx)) {
    compose();
  }

  const char* what() const noexcept override { return text_.c_str(); }
  ErrorCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  const ErrorContext& context() const noexcept { return ctx_; }

  // Lower layers often do not know the file or node; callers add what they know and rethrow.
  Error& with_file(std::string f) {
    if (ctx_.file.empty()) ctx_.file = std::move(f), compose();
    return *this;
  }
  Error& with_node(std::string n) {
    if (ctx_.node.empty()) ctx_.node = std::move(n), compose();
    return *this;
  }
  Error& with_tensor(std::string t) {
    if (ctx_.tensor.empty()) ctx_.tensor = std::move(t), compose();
    return *this;
  }

 private:
  void compose() {
    std::string s = "npusim ";
    s += error_code_name(code_);
    s += " error: ";
    if (!ctx_.file.empty()) s += ctx_.file + ": ";
    if (ctx_.offset) s += "byte " + std::to_string(*ctx_.offset) + ": ";
    if (!ctx_.node.empty()) s += "node '" + ctx_.node + "': ";
    if (!ctx_.tensor.empty()) s += "tensor '" + ctx_.tensor + "': ";
    s += message_;
    // Only what is known: "(expected A, found B)", "(expected A)" or "(found B)".
    if (!ctx_.expected.empty() && !ctx_.found.empty()) s += " (expected " + ctx_.expected + ", found " + ctx_.found + ")";
    else if (!ctx_.expected.empty()) s += " (expected " + ctx_.expected + ")";
    else if (!ctx_.found.empty()) s += " (found " + ctx_.found + ")";
    // Names and paths come from files: what() is printed, so control characters are escaped here,
    // the one place every message passes (message() and context() keep the raw text).
    text_ = printable(s);
  }

  ErrorCode code_;
  std::string message_;
  ErrorContext ctx_;
  std::string text_;
};

}  // namespace npusim::inline NPUSIM_ABI
