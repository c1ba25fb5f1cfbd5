// CRC-32 (the gzip / zlib polynomial, reflected) of checkpoint blocks, from Intel's
// ISA-L (Debian libisal-dev): it folds with PCLMULQDQ / VPCLMULQDQ where the CPU has
// them, several times faster than zlib's table-driven crc32, which was slower than
// reading the file from the page cache.
#include <isa-l/crc.h>

#include "tsr/checkpoint/format.h"

namespace tsr::ckpt::detail {

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), n);
}

}  // namespace tsr::ckpt::detail
