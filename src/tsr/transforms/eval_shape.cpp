// eval_shape and shape_dtype_struct (include/tsr/eval_shape.h): a function traced at
// its arguments' types, its results returned as abstract arrays (a type, no data).
#include "tsr/eval_shape.h"

#include "tsr/core/array_impl.h"
#include "tsr/error.h"
#include "tsr/transforms/ad.h"

namespace tsr {
namespace {

Array make_abstract(const ArrayType& t, const NamedSharding& sharding) {
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->meta = std::make_shared<const detail::ArrayMeta>(detail::ArrayMeta{t, sharding});
  impl->abstract = true;
  return Array(std::move(impl));
}

}  // namespace

Array shape_dtype_struct(const Shape& shape, DType dtype, const Placement& sharding) {
  check_dtype(dtype, "shape_dtype_struct");
  check_shape(shape, "shape_dtype_struct", itemsize(dtype));
  NamedSharding s = resolve_placement(sharding, shape, "shape_dtype_struct");
  ArrayType t;
  t.shape = shape;
  t.dtype = dtype;
  t.sharding = type_sharding(s, shape);
  Array a = make_abstract(t, s);
  if (auto g = detail::given_sharding(sharding, s)) return detail::with_given_sharding(a, *g);
  return a;
}

bool is_abstract(const Array& x) { return x.valid() && x.impl()->abstract; }

namespace detail {

std::vector<Array> eval_shape_flat(const FlatFn& f, const std::vector<Array>& args) {
  std::vector<ArrayType> in;
  in.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].valid())
      throw ValueError("[eval_shape] argument leaf " + std::to_string(i) +
                       " is an empty Array handle. Got a default-constructed Array; expected an "
                       "array or a shape_dtype_struct.");
    in.push_back(args[i].type());
  }
  // Traced only: the program is dropped, so nothing is lowered, allocated or run.
  Program p = trace_program(f, in);
  std::vector<Array> out;
  for (const auto& t : p.out_types()) out.push_back(make_abstract(t, t.sharding));
  return out;
}

}  // namespace detail
}  // namespace tsr
