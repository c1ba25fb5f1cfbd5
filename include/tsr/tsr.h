#pragma once
/** Tessera: JAX's parallel-array model in C++. Include this one header. */
#include "tsr/array.h"
#include "tsr/device.h"
#include "tsr/dtype.h"
#include "tsr/error.h"
#include "tsr/indexing.h"
#include "tsr/mesh.h"
#include "tsr/ops.h"
#include "tsr/random.h"
#include "tsr/shape.h"
#include "tsr/sharding.h"
#include "tsr/transforms.h"
