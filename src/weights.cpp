// npusim::compiled: Weight sources (safetensors, synth, Hugging Face directories), recipes and binding.
// Every impl/*_inl.hpp is compiled in exactly one of src/*.cpp (ctest layers.compiled_units).
#include "npusim/weights/impl/safetensors_inl.hpp"
#include "npusim/weights/impl/synth_inl.hpp"
#include "npusim/weights/impl/rope_inl.hpp"
#include "npusim/weights/impl/binding_inl.hpp"
#include "npusim/weights/impl/hf_checkpoint_inl.hpp"
#include "npusim/weights/impl/open_inl.hpp"
#include "npusim/weights/impl/recipes_inl.hpp"
#include "npusim/weights/impl/recipe_source_inl.hpp"
