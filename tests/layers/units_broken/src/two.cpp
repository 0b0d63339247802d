#include "npusim/x/impl/a_inl.hpp"
