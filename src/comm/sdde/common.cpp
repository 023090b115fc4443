// The SDDE's shared pieces (common.hpp): sends and probed receives counted in a step's
// Stats, and the records of the locality-aware bundles.
#include "comm/sdde/common.hpp"

namespace sparsecomm {
namespace detail {

void post_send(const Channel& ch, const Outbox& send, size_t i, bool synchronous, MPI_Request* req) {
  char* p = const_cast<char*>(send.ptr[i]);
  const int n = static_cast<int>(send.len[i]);
  if (synchronous) SPC_MPI(MPI_Issend(p, n, MPI_BYTE, send.ranks[i], ch.tag, ch.comm, req));
  else SPC_MPI(MPI_Isend(p, n, MPI_BYTE, send.ranks[i], ch.tag, ch.comm, req));
  if (ch.stats) ch.stats->record_send(ch.step, ch.intra(send.ranks[i]), send.len[i]);
}

void post_sends(const Channel& ch, const Outbox& send, std::vector<MPI_Request>& reqs) {
  reqs.assign(send.size(), MPI_REQUEST_NULL);
  for (size_t i = 0; i < send.size(); ++i) post_send(ch, send, i, false, &reqs[i]);
}

void receive_probed(const Channel& ch, const MPI_Status& st, Inbox& got) {
  int n = 0;
  SPC_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
  SPC_MPI(MPI_Recv(got.append(st.MPI_SOURCE, n), n, MPI_BYTE, st.MPI_SOURCE, ch.tag, ch.comm, MPI_STATUS_IGNORE));
  if (ch.stats) ch.stats->record_recv(ch.step, ch.intra(st.MPI_SOURCE), n);
}

void append_record(std::vector<char>& buf, int src, int dest, const char* p, int64_t n) {
  RecordHeader h{src, dest, n};
  const size_t at = buf.size();
  const size_t padded = static_cast<size_t>((n + 7) / 8 * 8);
  buf.resize(at + sizeof(h) + padded, 0);
  std::memcpy(buf.data() + at, &h, sizeof(h));
  if (n > 0) std::memcpy(buf.data() + at + sizeof(h), p, static_cast<size_t>(n));
}

void keep_record(Inbox& got, const RecordHeader& h, const char* payload) {
  if (h.nbytes > 0) std::memcpy(got.append(h.src, h.nbytes), payload, static_cast<size_t>(h.nbytes));
  else got.append(h.src, 0);
}

}  // namespace detail
}  // namespace sparsecomm
