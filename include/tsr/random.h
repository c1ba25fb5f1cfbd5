#pragma once
/** Counter-based random numbers (threefry2x32), independent of sharding. */
#include "tsr/array.h"
