// Helpers of the overlapped level variants (level.hpp).
#include <algorithm>
#include <queue>

#include "bfs2d/level.hpp"

namespace sparsecomm::bfs::detail {

int max_piece_for_int_counts(const Graph2D& g, const std::string& transport) {
  int64_t mp = 0;
  for (size_t r = 0; r + 1 < g.piece_offsets.size(); ++r) mp = std::max(mp, g.piece_offsets[r + 1] - g.piece_offsets[r]);
  if (2 * mp > INT_MAX)
    throw NotImplementedError("bfs: overlapped " + transport + ": a piece of " + std::to_string(mp) +
                              " vertices is too large for int-counted messages");
  return static_cast<int>(mp);
}

std::unique_ptr<int64_t[]> bound_buffer(size_t n) {
  return std::unique_ptr<int64_t[]>(new int64_t[std::max<size_t>(n, 1)]);
}

void split_fold(const std::vector<int64_t>& data, const std::vector<int>& cnt, int mycol, std::vector<int64_t>& own,
                std::vector<int64_t>& send, std::vector<int>& scounts, std::vector<int>& sdispls) {
  int64_t pos = 0;
  for (size_t j = 0; j < cnt.size(); ++j) {
    const auto b = data.begin() + pos, e = b + cnt[j];
    if (static_cast<int>(j) == mycol) {
      own.insert(own.end(), b, e);
    } else {
      scounts.push_back(cnt[j]);
      sdispls.push_back(static_cast<int>(send.size()));
      send.insert(send.end(), b, e);
    }
    pos += cnt[j];
  }
}

namespace {

// "own" holds one sorted run per chunk: sorted as a whole, it is one more list.
void sort_own(std::vector<int64_t>& own) {
  std::vector<std::pair<int64_t, int64_t>> pr;
  for (size_t k = 0; k + 1 < own.size(); k += 2) pr.emplace_back(own[k], own[k + 1]);
  std::sort(pr.begin(), pr.end());
  own.clear();
  for (auto& [v, u] : pr) own.insert(own.end(), {v, u});
}

// k-way merge of (v, u) runs sorted by v; the min u wins in update().
std::vector<int64_t> kway_merge(const std::vector<Segment>& lists) {
  std::vector<int64_t> merged;
  using Item = std::pair<int64_t, size_t>;  // (v, list)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  std::vector<size_t> at(lists.size(), 0);
  for (size_t i = 0; i < lists.size(); ++i) heap.emplace(lists[i].data[0], i);
  while (!heap.empty()) {
    auto [v, i] = heap.top();
    heap.pop();
    merged.insert(merged.end(), {v, lists[i].data[at[i] + 1]});
    at[i] += 2;
    if (at[i] != lists[i].n) heap.emplace(lists[i].data[at[i]], i);
  }
  return merged;
}

// Counting sort of (v, u) pairs by local vertex index v - pb. Pairs whose v is not mine
// (wrong data delivered) go last, unsorted, for update() to count and skip.
std::vector<int64_t> counting_sort(const std::vector<Segment>& lists, int64_t pb, int64_t pe) {
  const int64_t np = pe - pb;
  std::vector<int64_t> cnt(static_cast<size_t>(np) + 1, 0), bad;
  for (const Segment& s : lists)
    for (size_t k = 0; k < s.n; k += 2)
      if (s.data[k] >= pb && s.data[k] < pe) ++cnt[s.data[k] - pb + 1];
      else bad.insert(bad.end(), {s.data[k], s.data[k + 1]});
  for (int64_t i = 0; i < np; ++i) cnt[i + 1] += cnt[i];
  std::vector<int64_t> merged(static_cast<size_t>(cnt[np]) * 2);
  for (const Segment& s : lists)
    for (size_t k = 0; k < s.n; k += 2)
      if (s.data[k] >= pb && s.data[k] < pe) {
        const int64_t at = cnt[s.data[k] - pb]++;
        merged[at * 2] = s.data[k], merged[at * 2 + 1] = s.data[k + 1];
      }
  merged.insert(merged.end(), bad.begin(), bad.end());
  return merged;
}

}  // namespace

std::vector<int64_t> combine(Ctx& c, std::vector<int64_t>& own, const std::vector<Segment>& received, bool sorted) {
  if (sorted) {
    Clock s(&c.t.sort);
    sort_own(own);
  }
  std::vector<Segment> lists;
  if (!own.empty()) lists.push_back({own.data(), own.size()});
  for (const Segment& s : received)
    if (s.n > 0) lists.push_back(s);
  std::vector<int64_t> merged;
  {
    Clock s(&c.t.sort);
    merged = sorted ? kway_merge(lists) : counting_sort(lists, c.pb, c.pe);
  }
  return c.update(merged);
}

}  // namespace sparsecomm::bfs::detail
