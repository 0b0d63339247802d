// npusim::compiled: The IR reader, JSON helpers, tokenizers and chat templates.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/ir/impl/json_inl.hpp"
#include "npusim/ir/impl/reader_inl.hpp"
#include "npusim/text/impl/tokenizer_inl.hpp"
#include "npusim/text/impl/chat_inl.hpp"
#include "npusim/text/impl/model_text_inl.hpp"
