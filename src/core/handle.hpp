#pragma once
// A printable id of an MPI handle (internal). The standard leaves handles opaque: Open MPI's
// are pointers, MPICH's and its derivatives' (Cray MPICH, Intel MPI, MVAPICH) are integers,
// so neither static_cast<void*> nor "%d" works on both. The handle's bytes, in hex, do.
#include <cstring>
#include <string>
#include <type_traits>

namespace sparsecomm::detail {

template <class Handle>
std::string handle_id(Handle h) {
  static_assert(std::is_trivially_copyable_v<Handle>, "MPI handles are plain values");
  unsigned char bytes[sizeof(Handle)];
  std::memcpy(bytes, &h, sizeof h);
  static const char* const kHex = "0123456789abcdef";
  std::string out = "0x";
  for (size_t i = sizeof(Handle); i-- > 0;) {  // most significant first on little-endian machines
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

}  // namespace sparsecomm::detail
