// Rules of lax.fft (jax/_src/lax/fft.py): fft_abstract_eval's shape and dtype checks and
// texts, the sharding kept from the operand, the transposes (_fft_transpose_rule) and
// the batching rule. The kernel needs the transformed dims whole; partition() moves
// their mesh axes onto a batch dim (the transpose method) rather than gathering them.
#include "tsr/prims/fft.h"

#include "tsr/ops.h"
#include "tsr/prims/common.h"
#include "tsr/prims/creation.h"
#include "tsr/transforms/ad.h"
#include "tsr/transforms/ad_rules.h"
#include "tsr/transforms/batch.h"

namespace tsr::prim {
using namespace tsr::detail;
using fft::FftType;

namespace {
const bool registered =
    register_primitive("fft") && declare_ad("fft", AdKind::Linear) && declare_complex("fft");

const char* type_name(FftType t) {
  static const char* names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  return names[static_cast<int>(t)];
}

std::string tuple(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// The last-dim weights of lax's rfft / irfft transposes over the m bins of `like` (a
// length-n transform): `edge` at bin 0 and, for even n, at the Nyquist bin m - 1;
// `middle` elsewhere. A [m] array replicated on like's mesh.
Array bin_mask(const Array& like, int64_t n, double edge, double middle) {
  const int64_t m = like.shape().back();
  ArrayType t;
  t.shape = {m};
  t.dtype = DType::Int32;
  t.sharding = NamedSharding(like.type().sharding.mesh(), PartitionSpec());
  t.vma = like.type().vma;
  Array k = bind1(std::make_shared<Iota>(DType::Int32, Shape{m}, 0, placed_like(t, like)), {});
  Array at_edge = equal(k, 0);
  if (n % 2 == 0) at_edge = logical_or(at_edge, equal(k, m - 1));
  return astype(where(at_edge, edge, middle), like.dtype());
}
}  // namespace

std::vector<ArrayType> Fft::infer(const std::vector<ArrayType>& in) const {
  const ArrayType& x = in.at(0);
  const int k = static_cast<int>(lengths_.size()), r = x.ndim();
  if (k == 0 || k > 3)
    throw ValueError(
        "[fft] fft_lengths must name 1, 2 or 3 dimensions. Got fft_lengths=" + tuple(lengths_) +
        "; expected 1 to 3 lengths. Transform more axes with several calls "
        "(tsr::fft::fftn does).");
  if (k > r)
    throw ValueError("[fft] FFT input shape " + tuple(x.shape) +
                     " must have at least as many input dimensions as fft_lengths " +
                     tuple(lengths_) + ". Got " + x.str() +
                     "; expected rank >= " + std::to_string(k) + ".");
  for (int64_t n : lengths_)
    if (n < 0)
      throw ValueError("[fft] fft_lengths must be non-negative. Got " + tuple(lengths_) + ".");
  Shape minor(x.shape.end() - k, x.shape.end());
  Shape shape = x.shape;
  DType dt = x.dtype;
  if (type_ == FftType::RFFT) {
    if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
      throw ValueError(std::string("[fft] RFFT input must be float32 or float64, got ") +
                       dtype_name(x.dtype) + ". Got " + x.str() +
                       "; expected a real float array (tsr::fft::rfft converts for you).");
    if (minor != lengths_)
      throw ValueError("[fft] RFFT input shape " + tuple(x.shape) +
                       " minor dimensions must be equal to fft_lengths " + tuple(lengths_) +
                       ". Crop or pad the input first (tsr::fft::rfftn's s does).");
    shape.back() = lengths_.back() / 2 + 1;
    dt = complex_dtype(x.dtype);
  } else {
    if (!is_complex(x.dtype))
      throw ValueError(std::string("[fft] ") + type_name(type_) +
                       " input must be complex64 or complex128, got " + dtype_name(x.dtype) +
                       ". Got " + x.str() +
                       "; expected a complex array (tsr::fft::fft converts for you).");
    if (type_ == FftType::IRFFT) {
      if (!std::equal(minor.begin(), minor.end() - 1, lengths_.begin()) ||
          minor.back() != lengths_.back() / 2 + 1)
        throw ValueError("[fft] IRFFT input shape " + tuple(x.shape) +
                         " minor dimensions must be equal to all except the last fft_length, "
                         "got fft_lengths=" +
                         tuple(lengths_) + ", and the last must be fft_lengths[-1] // 2 + 1 = " +
                         std::to_string(lengths_.back() / 2 + 1) +
                         ". Crop or pad the input first (tsr::fft::irfftn's s does).");
      shape.back() = lengths_.back();
      dt = real_dtype(x.dtype);
    } else if (minor != lengths_) {
      throw ValueError("[fft] FFT input shape " + tuple(x.shape) +
                       " minor dimensions must be equal to fft_lengths " + tuple(lengths_) +
                       ". Crop or pad the input first (tsr::fft::fftn's s does).");
    }
  }
  // The transform is linear: each device's transform of its partial value is a partial
  // of the transform (JAX raises NotImplementedError for unreduced operands).
  // The operand's sharding (a halved or restored last dim must stay divisible: E9).
  ArrayType t = varying_out(shape, x, type_name(type_), "fft");
  t.dtype = dt;
  t.weak = false;
  return {t};
}

Lowering Fft::partition(const std::vector<ArrayType>& in, const std::vector<ArrayType>& out) const {
  const ArrayType& x = in[0];
  const int r = x.ndim(), k = static_cast<int>(lengths_.size());
  std::vector<PartitionEntry> e = entries_of(x);
  Axes moved;
  for (int d = r - k; d < r; ++d) {
    for (const auto& a : e[d].axes()) moved.push_back(a);
    e[d] = PartitionEntry();
  }
  if (!moved.empty()) {
    // The transpose method: the first unsharded batch dim that the moved axes divide
    // takes them, so the kernel sees whole lines and two all-to-alls replace a gather.
    int64_t size = 1;
    for (const auto& a : moved) size *= x.sharding.mesh().axis_size(a);
    for (int d = 0; d < r - k; ++d)
      if (e[d].is_none() && x.shape[d] % size == 0 && x.shape[d] >= size) {
        e[d] = PartitionEntry(moved);
        break;
      }
  }
  return {{with_sets_of(e, x.sharding.spec())}, {with_sets_of(e, out[0].sharding.spec())}};
}

std::string Fft::params() const {
  return std::string("fft_type=FftType.") + type_name(type_) + " fft_lengths=" + tuple(lengths_);
}

std::vector<Array> Fft::jvp(const std::vector<Array>& primals, const std::vector<Array>& tangents,
                            std::vector<Array>&) const {
  return ad::linear_jvp(*this, primals, tangents);
}

// lax's _fft_transpose_rule: the DFT matrix is symmetric, so FFT and IFFT transpose to
// themselves; RFFT and IRFFT to each other with the Hermitian bins weighted.
std::vector<Array> Fft::transpose(const std::vector<Array>& cts,
                                  const std::vector<LinearIn>& ins) const {
  const Array& t = cts[0];
  int64_t total = 1;
  for (int64_t n : lengths_) total *= n;
  const int64_t n = lengths_.back();
  Array r;
  if (type_ == FftType::RFFT) {
    // N irfft(conj(t) / mask), mask 1 at the edge bins and 2 elsewhere.
    Array w = bin_mask(t, n, 1.0, 0.5);
    r = bind1(std::make_shared<Fft>(FftType::IRFFT, lengths_), {multiply(conj(t), w)});
    r = multiply(r, static_cast<double>(total));
  } else if (type_ == FftType::IRFFT) {
    // conj(mask rfft(t) / N).
    Array x = bind1(std::make_shared<Fft>(FftType::RFFT, lengths_), {t});
    Array w = bin_mask(x, n, 1.0, 2.0);
    r = conj(multiply(x, multiply(w, 1.0 / static_cast<double>(total))));
  } else {
    r = bind1(shared_from_this(), {t});
  }
  return {ad::coerce(r, ins[0].type, "fft", "cotangent")};
}

Batched Fft::batch(const std::vector<Array>& args, const std::vector<int>& dims) const {
  return {{bind1(shared_from_this(), {move_batch(args[0], dims[0], 0)})}, {0}};
}

}  // namespace tsr::prim
