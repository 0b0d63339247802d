// The IR graph in memory: every tensor (graph input, weight placeholder, node output) has an id;
// nodes refer to tensors by id. Kept faithful to the file: passes rewrite it, the reader does not.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "npusim/core/dtype.hpp"
#include "npusim/core/shape.hpp"
#include "npusim/core/tensor.hpp"
#include "npusim/ir/attr.hpp"

namespace npusim::inline NPUSIM_ABI::ir {

using TensorId = std::int32_t;
inline constexpr TensorId no_tensor = -1;

enum class TensorKind : std::uint8_t { input, weight, constant, intermediate };

inline const char* tensor_kind_name(TensorKind k) {
  switch (k) {
    case TensorKind::input: return "input";
    case TensorKind::weight: return "weight";
    case TensorKind::constant: return "constant";
    case TensorKind::intermediate: return "intermediate";
  }
  return "?";
}

struct TensorInfo {
  std::string name;  // IR name: node output name, graph input name or weight placeholder (p_/b_/c_)
  Shape shape;
  DType dtype = DType::f32;
  TensorKind kind = TensorKind::intermediate;
  std::int32_t producer = -1;     // node index for intermediates
  std::int32_t producer_output = 0;
  std::string weight_key;         // state_dict key, for weights and constants
};

struct Node {
  std::string name;
  std::string op_type;
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  AttrMap attrs;
};

struct Graph {
  std::string model_name;
  std::string pytorch_version;
  std::string source;  // file the graph was read from (for messages)

  std::vector<TensorInfo> tensors;
  std::vector<TensorId> inputs;   // graph inputs, signature order
  std::vector<TensorId> outputs;  // graph outputs
  std::vector<TensorId> weights;  // weight placeholders, including unused ones
  std::vector<Node> nodes;        // topological order
  std::map<std::string, Tensor> constants;  // state_dict key -> value (from the IR's "constants")

  const TensorInfo& tensor(TensorId id) const { return tensors.at(static_cast<std::size_t>(id)); }
  TensorInfo& tensor(TensorId id) { return tensors.at(static_cast<std::size_t>(id)); }

  std::optional<TensorId> find(std::string_view name) const {
    auto it = index_.find(std::string(name));
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  TensorId add_tensor(TensorInfo info) {
    auto id = static_cast<TensorId>(tensors.size());
    index_[info.name] = id;
    tensors.push_back(std::move(info));
    return id;
  }
  void reindex() {
    index_.clear();
    for (std::size_t i = 0; i < tensors.size(); ++i) index_[tensors[i].name] = static_cast<TensorId>(i);
  }

  // How many node inputs read each tensor (graph outputs count as one reader each).
  std::vector<int> use_counts() const {
    std::vector<int> uses(tensors.size(), 0);
    for (const Node& n : nodes)
      for (TensorId t : n.inputs) ++uses[static_cast<std::size_t>(t)];
    for (TensorId t : outputs) ++uses[static_cast<std::size_t>(t)];
    return uses;
  }

 private:
  std::unordered_map<std::string, TensorId> index_;
};

}  // namespace npusim::inline NPUSIM_ABI::ir
