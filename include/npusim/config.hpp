// Header-only or compiled: how npusim's heavy non-template code reaches a program.
//
// Header-only (the default, target npusim::npusim): a header that declares such code includes its
// definitions from impl/*_inl.hpp at its end, marked NPUSIM_FUNC (= inline), and every TU that
// uses them compiles them.
//
// Compiled (NPUSIM_COMPILED_LIB, defined by the CMake target npusim::compiled): the headers only
// declare; src/*.cpp include the impl/*_inl.hpp files once each, NPUSIM_FUNC empty, into the
// library libnpusim_compiled, and the targets' common instantiations (describe_target<T>) are
// declared extern. A program must not mix the two modes across its TUs.
#pragma once

#ifdef NPUSIM_COMPILED_LIB
#define NPUSIM_FUNC
#else
#define NPUSIM_FUNC inline
#endif
