#pragma once
/** NumPy-style indexing, gather and scatter on sharded arrays. */
#include "tsr/array.h"
