#include "npusim/x/impl/a_inl.hpp"
#include "npusim/x/impl/c_inl.hpp"
