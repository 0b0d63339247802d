#include "pch.hpp"
