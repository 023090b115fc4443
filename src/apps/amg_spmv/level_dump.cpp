#include "amg_spmv/level_dump.hpp"

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <system_error>

#include "common/table.hpp"
#include "core/compare.hpp"
#include "sparsecomm/core/error.hpp"
#include "sparsecomm/core/mpi_util.hpp"
#include "sparsecomm/kernels/dist_spmv.hpp"
#include "sparsecomm/kernels/halo_pattern.hpp"
#include "sparsecomm/matrix/mtx_reader.hpp"

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

namespace sparsecomm::apps::amg {

namespace {

/// Collective. Sorted local entries of `a` and `b` identical, and the same column partition.
bool same_entries(const DistCsr<double>& a, const DistCsr<double>& b) {
  auto order = [](const Triplet<double>& u, const Triplet<double>& v) {
    return u.row != v.row ? u.row < v.row : u.col < v.col;
  };
  auto ta = a.local_triplets(), tb = b.local_triplets();
  std::sort(ta.begin(), ta.end(), order);
  std::sort(tb.begin(), tb.end(), order);
  bool same = ta.size() == tb.size() && b.col_partition() == a.col_partition();
  for (size_t k = 0; same && k < ta.size(); ++k)
    same = ta[k].row == tb[k].row && ta[k].col == tb[k].col && ta[k].val == tb[k].val;
  return same;
}

}  // namespace

void dump_level(MPI_Comm comm, const Config& cfg, const Hierarchy& h, int l, const DistCsr<double>& a,
                const LevelVectors& v, Level& L) {
  hypre_ParCSRMatrix* Al = h.level(l);
  L.file = cfg.dump_dir + "/level_" + std::to_string(l) + ".mtx";
  std::ostringstream what;
  what << "sparsecomm_amg_spmv: BoomerAMG level " << l << " of " << h.levels() << ", " << cfg.nx << "x" << cfg.ny
       << " rotated anisotropic diffusion (Hypre GenerateRotate7pt, angle " << cfg.angle << " deg, eps " << cfg.eps << ")";
  std::ostringstream how;
  how << "hierarchy built with Hypre on " << cfg.nranks << " MPI rank(s), processor grid " << h.P << "x" << h.Q
      << "; global row order is Hypre's; rows " << L.rows << ", nnz " << L.nnz;
  apps::write_matrix_market(a, L.file, {what.str(), how.str()});
  MtxReadOptions ro;
  ro.has_row_partition = true;
  ro.rows = a.row_partition();
  DistCsr<double> back = read_matrix_market(comm, L.file, ro);
  const double hnnz = static_cast<double>(hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixDiag(Al)) +
                                          hypre_CSRMatrixNumNonzeros(hypre_ParCSRMatrixOffd(Al)));
  auto red = reduce_all(comm, {hnnz, same_entries(a, back) ? 0.0 : 1.0});
  L.hypre_nnz = static_cast<int64_t>(red[0].sum);
  L.file_nnz = back.global_nnz();
  L.same_entries = red[1].max == 0.0 && L.file_nnz == L.hypre_nnz && L.file_nnz == L.nnz;
  Sdde sdde(comm, cfg.loc);
  DistSpmv bspmv(back, cfg.plan("p2p", pattern_from_matrix(back, sdde, cfg.sdde), comm));
  std::vector<double> yb(static_cast<size_t>(back.local_rows()) + 1);
  bspmv.apply(v.xs.data(), yb.data());
  L.reread_err = compare(yb.data(), v.yref, back.local_rows()).allreduce(comm).rel_err();
  if (comm_rank(comm) == 0)
    std::cerr << "    wrote " << L.file << " (re-read: " << (L.same_entries ? "entries identical" : "ENTRIES DIFFER")
              << ", SpMV rel err " << apps::num("%.1e", L.reread_err) << " vs hypre_ParCSRMatrixMatvec)\n";
}

bool report_dump(const Config& cfg, int nlevels, const std::vector<Level>& out) {
  std::ofstream idx(cfg.dump_dir + "/levels.tsv");
  idx << "# BoomerAMG hierarchy of the " << cfg.nx << "x" << cfg.ny << " rotated anisotropic diffusion (angle "
      << cfg.angle << " deg, eps " << cfg.eps << "), built with Hypre on " << cfg.nranks << " MPI rank(s), " << nlevels
      << " levels\n"
      << "level\trows\tnnz\tfile\n";
  std::ostringstream os;
  os << "\nlevels written to " << cfg.dump_dir << " (hierarchy built with Hypre on " << cfg.nranks << " rank(s)):\n";
  apps::Table t({"level", "rows", "nnz", "hypre nnz", "file nnz", "entries", "SpMV rel err", "file"});
  bool ok = true;
  for (int l = 0; l < nlevels; ++l) {
    const Level& L = out[l];
    const std::string fname = L.file.substr(L.file.find_last_of('/') + 1);
    idx << l << "\t" << L.rows << "\t" << L.nnz << "\t" << fname << "\n";
    ok = ok && L.same_entries && L.reread_err <= 1e-12;
    t.add({std::to_string(l), std::to_string(L.rows), std::to_string(L.nnz), std::to_string(L.hypre_nnz),
           std::to_string(L.file_nnz), L.same_entries ? "identical" : "DIFFER", apps::num("%.1e", L.reread_err), fname});
  }
  std::cout << os.str() << t.str()
            << (ok ? "every level re-read and checked against Hypre (entries, nnz, hypre_ParCSRMatrixMatvec)\n"
                   : "DUMP VERIFICATION FAILED\n");
  return ok;
}

}  // namespace sparsecomm::apps::amg
