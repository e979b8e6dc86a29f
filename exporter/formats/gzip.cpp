#include "exporter/formats/gzip.hpp"

#include <zlib.h>

#include <stdexcept>

namespace rdma_exporter {
namespace {

// One deflate stream per thread and level, reset for each member: setting a
// stream up (deflateInit2 allocates and clears about 260 KiB of window and
// hash tables) costs more than compressing a small exposition.
class Deflater {
 public:
  Deflater() = default;
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  ~Deflater() { end(); }

  z_stream& stream(int level) {
    if (ready_ && level_ == level && deflateReset(&zs_) == Z_OK) return zs_;
    end();
    zs_ = z_stream{};
    // windowBits 15 + 16 selects the gzip wrapper.
    if (deflateInit2(&zs_, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw std::runtime_error("zlib: deflateInit2 failed");
    }
    ready_ = true;
    level_ = level;
    return zs_;
  }

 private:
  void end() {
    if (ready_) deflateEnd(&zs_);
    ready_ = false;
  }

  z_stream zs_{};
  bool ready_ = false;
  int level_ = 0;
};

}  // namespace

std::string gzip_compress(std::string_view data, int level) {
  thread_local Deflater deflater;
  z_stream& zs = deflater.stream(level);
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(data.size())) + 32);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib: deflate did not finish");
  return out;
}

}  // namespace rdma_exporter
