// exporter/formats/gzip: each member read back byte by byte as RFC 1952
// lays it out: the ten header bytes, the deflate data (inflated here
// without the gzip wrapper, so zlib checks none of it for us), and the
// trailer's CRC-32 and length.

#include "exporter/formats/gzip.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rdma_exporter {
namespace {

constexpr std::size_t kHeader = 10;
constexpr std::size_t kTrailer = 8;

uint8_t byte_at(const std::string& s, std::size_t i) {
  return static_cast<uint8_t>(s.at(i));
}

uint32_t le32_at(const std::string& s, std::size_t i) {
  return static_cast<uint32_t>(byte_at(s, i)) | static_cast<uint32_t>(byte_at(s, i + 1)) << 8 |
         static_cast<uint32_t>(byte_at(s, i + 2)) << 16 |
         static_cast<uint32_t>(byte_at(s, i + 3)) << 24;
}

// Raw deflate data from `at` inflated; `used` is how many bytes it took.
std::string inflate_raw(const std::string& in, std::size_t at, std::size_t& used) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, -15), Z_OK);
  std::string out;
  std::vector<char> chunk(1 << 16);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + at));
  zs.avail_in = static_cast<uInt>(in.size() - at);
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(chunk.data(), chunk.size() - zs.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END) << zs.msg;
  used = in.size() - at - zs.avail_in;
  inflateEnd(&zs);
  return out;
}

// An exposition-like text: long runs of the same names and labels.
std::string exposition() {
  std::string text;
  for (int i = 0; i < 2000; ++i) {
    text += "rdma_port_hw_out_of_sequence_total{device=\"mlx5_" + std::to_string(i % 16) +
            "\",port=\"1\"} " + std::to_string(i * 7919) + "\n";
  }
  return text;
}

std::string all_byte_values() {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes.push_back(static_cast<char>(i));
  return bytes;
}

TEST(Gzip, EveryByteOfTheMemberIsWhereRfc1952PutsIt) {
  for (const std::string& data :
       {std::string(), std::string("a"), all_byte_values(), exposition()}) {
    for (int level : {-1, 1, kExpositionGzipLevel, 9}) {
      SCOPED_TRACE(std::to_string(data.size()) + " bytes at level " + std::to_string(level));
      const std::string z = gzip_compress(data, level);
      ASSERT_GE(z.size(), kHeader + kTrailer);
      // ID1 ID2, CM (deflate), FLG (no name, comment, extra or header CRC),
      // MTIME 0 (none), XFL (zlib's: 2 best, 4 fastest), OS 3 (Unix).
      EXPECT_EQ(byte_at(z, 0), 0x1f);
      EXPECT_EQ(byte_at(z, 1), 0x8b);
      EXPECT_EQ(byte_at(z, 2), Z_DEFLATED);
      EXPECT_EQ(byte_at(z, 3), 0);
      EXPECT_EQ(le32_at(z, 4), 0U);
      EXPECT_EQ(byte_at(z, 8), level == 9 ? 2 : level == 1 ? 4 : 0);
      EXPECT_EQ(byte_at(z, 9), 3);
      // The deflate data holds the input and ends where the trailer begins.
      std::size_t used = 0;
      EXPECT_EQ(inflate_raw(z, kHeader, used), data);
      EXPECT_EQ(used, z.size() - kHeader - kTrailer);
      // CRC-32 and ISIZE, little endian, and nothing after them.
      const auto crc =
          crc32(0L, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
      EXPECT_EQ(le32_at(z, z.size() - kTrailer), static_cast<uint32_t>(crc));
      EXPECT_EQ(le32_at(z, z.size() - 4), static_cast<uint32_t>(data.size()));
    }
  }
}

}  // namespace
}  // namespace rdma_exporter
