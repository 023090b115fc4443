#include "amg_spmv/level_dump.hpp"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"

namespace sparsecomm::apps {

namespace {

std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, buf, &len);
  return std::string(buf, static_cast<size_t>(len));
}

}  // namespace

void make_directory(MPI_Comm comm, const std::string& dir) {
  std::string err;
  if (comm_rank(comm) == 0) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) err = "cannot create directory " + dir + ": " + ec.message();
  }
  agree(comm, err);
}

void write_matrix_market(const DistCsr<double>& a, const std::string& path, const std::vector<std::string>& comments) {
  MPI_Comm comm = a.comm();
  const int rank = comm_rank(comm);

  // This rank's text: its rows in order, columns ascending within a row (local_triplets
  // lists the diagonal block before the off-diagonal block inside each row).
  std::vector<Triplet<double>> t = a.local_triplets();
  std::stable_sort(t.begin(), t.end(), [](const Triplet<double>& x, const Triplet<double>& y) {
    return x.row != y.row ? x.row < y.row : x.col < y.col;
  });
  std::string text;
  if (rank == 0) {
    text += "%%MatrixMarket matrix coordinate real general\n";
    for (std::string c : comments) {
      std::replace(c.begin(), c.end(), '\n', ' ');
      text += "% " + c + "\n";
    }
    text += std::to_string(a.global_rows()) + " " + std::to_string(a.global_cols()) + " " +
            std::to_string(a.global_nnz()) + "\n";
  }
  text.reserve(text.size() + t.size() * 36);
  char line[96];
  for (const auto& e : t) {
    const int n = std::snprintf(line, sizeof line, "%" PRId64 " %" PRId64 " %.17g\n", e.row + 1, e.col + 1, e.val);
    text.append(line, static_cast<size_t>(n));
  }

  // Byte offset of this rank's text: exclusive prefix sum of the sizes.
  long long mine = static_cast<long long>(text.size()), offset = 0, total = 0;
  SPC_MPI(MPI_Exscan(&mine, &offset, 1, MPI_LONG_LONG, MPI_SUM, comm));
  if (rank == 0) offset = 0;  // MPI_Exscan leaves rank 0's result undefined
  SPC_MPI(MPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, comm));

  // File errors return codes (MPI_ERRORS_RETURN is the default handler for files). Open,
  // set_size and close are collective: every rank calls them, errors are agreed after.
  MPI_File fh = MPI_FILE_NULL;
  int rc = MPI_File_open(comm, path.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  std::string err = rc == MPI_SUCCESS ? "" : "cannot open " + path + " for writing: " + mpi_error_string(rc);
  // Open is collective and should fail everywhere at once; agree anyway, so that no rank is
  // ever left alone in MPI_File_set_size.
  try {
    agree(comm, err);
  } catch (...) {
    if (rc == MPI_SUCCESS) MPI_File_close(&fh);
    throw;
  }
  rc = MPI_File_set_size(fh, static_cast<MPI_Offset>(total));  // truncates an older, longer file
  if (rc != MPI_SUCCESS) err = "cannot set the size of " + path + ": " + mpi_error_string(rc);
  // MPI counts are ints: write in chunks of at most 1 GiB.
  for (size_t done = 0; err.empty() && done < text.size();) {
    const int n = static_cast<int>(std::min<size_t>(text.size() - done, size_t(1) << 30));
    MPI_Status st;
    rc = MPI_File_write_at(fh, static_cast<MPI_Offset>(offset + static_cast<long long>(done)), text.data() + done, n,
                           MPI_CHAR, &st);
    int written = 0;
    if (rc == MPI_SUCCESS) MPI_Get_count(&st, MPI_CHAR, &written);
    if (rc != MPI_SUCCESS) err = "cannot write " + path + ": " + mpi_error_string(rc);
    else if (written != n) err = "short write to " + path;
    done += static_cast<size_t>(n);
  }
  rc = MPI_File_close(&fh);
  if (rc != MPI_SUCCESS && err.empty()) err = "cannot close " + path + ": " + mpi_error_string(rc);
  agree(comm, err);
}

}  // namespace sparsecomm::apps
