// SDDE conformance: every strategy x emulated region layout x message pattern, checked
// against the direct answer (computed locally: every rank can regenerate what every other
// rank sends, so the expected receive list needs no communication), and against the dense
// reference_exchange.
#include <gtest/gtest.h>

#include <cstdlib>
#include <chrono>
#include <thread>
#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sparsecomm/comm/sdde.hpp"
#include "test_util.hpp"

using namespace sparsecomm;

namespace {

// What rank `src` sends in pattern `kind` (deterministic, the same on every rank).
SparseMessages<int64_t> messages_of(const std::string& kind, int src, int p, int round = 0) {
  SparseMessages<int64_t> m;
  auto payload = [&](int dst, int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) v[k] = (static_cast<int64_t>(src) << 40) ^ (static_cast<int64_t>(dst) << 20) ^ (k + 7 * round);
    return v;
  };
  if (kind == "random") {
    std::mt19937_64 rng(1234 + 977 * src + 31 * round);
    for (int d = 0; d < p; ++d)
      if (rng() % 3 == 0) m.add(d, payload(d, static_cast<int64_t>(rng() % 5)));  // lengths 0..4
  } else if (kind == "self") {
    m.add(src, payload(src, 3));
  } else if (kind == "none") {
  } else if (kind == "dense") {
    for (int d = 0; d < p; ++d) m.add(d, payload(d, 1 + (src + d) % 3));
  } else if (kind == "zero_length") {
    for (int d = 0; d < p; ++d)
      if ((src + d) % 2 == 0) m.add(d, payload(d, 0));
  } else if (kind == "zero_bytes") {  // payloads that are all zero bytes
    for (int d = 0; d < p; ++d)
      if (d != src) m.add(d, std::vector<int64_t>(2, 0));
  } else if (kind == "one_to_all") {
    if (src == 0)
      for (int d = 0; d < p; ++d) m.add(d, payload(d, 2));
  } else if (kind == "all_to_one") {
    m.add(p - 1, payload(p - 1, 1 + src % 2));
  } else if (kind == "ring_reverse_order") {  // destinations listed in decreasing order
    m.add((src + p - 1) % p, payload((src + p - 1) % p, 2));
    if (p > 2) m.add((src + 1) % p, payload((src + 1) % p, 1));
  }
  return m;
}

// Fixed-size version: every message has exactly `count` elements.
SparseMessages<int64_t> fixed_messages_of(const std::string& kind, int src, int p, int count) {
  auto v = messages_of(kind, src, p);
  SparseMessages<int64_t> m;
  for (size_t i = 0; i < v.size(); ++i) {
    std::vector<int64_t> x(static_cast<size_t>(count), 0);
    for (int k = 0; k < count; ++k) x[k] = src * 1000 + v.ranks[i] * 10 + k;
    m.add(v.ranks[i], x);
  }
  return m;
}

template <class Gen>
SparseMessages<int64_t> expected_for(int me, int p, Gen&& gen) {
  SparseMessages<int64_t> e;
  for (int s = 0; s < p; ++s) {
    auto m = gen(s);
    for (size_t i = 0; i < m.size(); ++i)
      if (m.ranks[i] == me) e.add(s, m.message(i));
  }
  return e;
}

const std::vector<std::string> kKinds = {"random", "self", "none", "dense", "zero_length",
                                         "zero_bytes", "one_to_all", "all_to_one", "ring_reverse_order"};
const std::vector<std::string> kRegions = {"ppn:1", "ppn:2", "ppn:3", "ppn:4", "cyclic:2", "flat"};

std::string fmt(const SparseMessages<int64_t>& m) {
  std::string s;
  for (size_t i = 0; i < m.size(); ++i) s += std::to_string(m.ranks[i]) + ":" + std::to_string(m.count(i)) + " ";
  return s;
}

class SddeConformance : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(SddeConformance, VariableSizeMatchesDirectAnswer) {
  const auto& [strategy, regions] = GetParam();
  const int p = test::size(), me = test::rank();
  Sdde sdde(MPI_COMM_WORLD, Locality::parse(MPI_COMM_WORLD, regions));
  for (const auto& kind : kKinds) {
    auto send = messages_of(kind, me, p);
    auto expect = expected_for(me, p, [&](int s) { return messages_of(kind, s, p); });
    if (Sdde::fixed_size_only(strategy)) {
      EXPECT_THROW(sdde.exchange(send, strategy), InputError) << kind;
      continue;
    }
    auto got = sdde.exchange(send, strategy);
    EXPECT_EQ(got, expect) << "pattern " << kind << ": got " << fmt(got) << " expected " << fmt(expect);
    EXPECT_EQ(reference_exchange(MPI_COMM_WORLD, send), expect) << kind;
  }
}

TEST_P(SddeConformance, FixedSizeMatchesDirectAnswer) {
  const auto& [strategy, regions] = GetParam();
  const int p = test::size(), me = test::rank();
  Sdde sdde(MPI_COMM_WORLD, Locality::parse(MPI_COMM_WORLD, regions));
  for (int count : {1, 3}) {
    for (const auto& kind : kKinds) {
      auto send = fixed_messages_of(kind, me, p, count);
      auto expect = expected_for(me, p, [&](int s) { return fixed_messages_of(kind, s, p, count); });
      auto got = sdde.exchange_fixed(send, count, strategy);
      EXPECT_EQ(got, expect) << "pattern " << kind << " count " << count;
    }
  }
}

TEST_P(SddeConformance, BackToBackCallsDoNotMix) {
  const auto& [strategy, regions] = GetParam();
  const int p = test::size(), me = test::rank();
  const bool fixed = Sdde::fixed_size_only(strategy);
  Sdde sdde(MPI_COMM_WORLD, Locality::parse(MPI_COMM_WORLD, regions));
  auto gen = [&](int s, int round) {
    return fixed ? fixed_messages_of(round % 2 ? "random" : "dense", s, p, 1 + round % 3)
                 : messages_of("random", s, p, round);
  };
  for (int round = 0; round < 12; ++round) {
    auto send = gen(me, round);
    auto got = fixed ? sdde.exchange_fixed(send, 1 + round % 3, strategy) : sdde.exchange(send, strategy);
    auto expect = expected_for(me, p, [&](int s) { return gen(s, round); });
    ASSERT_EQ(got, expect) << "round " << round;
  }
}

TEST_P(SddeConformance, LocalityCountsAndUserTrafficIsolation) {
  const auto& [strategy, regions] = GetParam();
  const int p = test::size(), me = test::rank();
  Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
  Sdde sdde(MPI_COMM_WORLD, loc);
  // A user message with a tag the library might use is in flight on the parent
  // communicator during the exchange; the library must not pick it up.
  const int right = (me + 1) % p, left = (me + p - 1) % p;
  int64_t user_out = 4242 + me, user_in = -1;
  MPI_Request ureq[2];
  for (int tag : {1000, 1001}) {
    MPI_Isend(&user_out, 1, MPI_INT64_T, right, tag, MPI_COMM_WORLD, &ureq[0]);
    auto send = Sdde::fixed_size_only(strategy) ? fixed_messages_of("dense", me, p, 2) : messages_of("dense", me, p);
    auto expect = Sdde::fixed_size_only(strategy)
                      ? expected_for(me, p, [&](int s) { return fixed_messages_of("dense", s, p, 2); })
                      : expected_for(me, p, [&](int s) { return messages_of("dense", s, p); });
    Stats stats;
    auto got = Sdde::fixed_size_only(strategy) ? sdde.exchange_fixed(send, 2, strategy, &stats)
                                               : sdde.exchange(send, strategy, &stats);
    EXPECT_EQ(got, expect);
    MPI_Irecv(&user_in, 1, MPI_INT64_T, left, tag, MPI_COMM_WORLD, &ureq[1]);
    MPI_Waitall(2, ureq, MPI_STATUSES_IGNORE);
    EXPECT_EQ(user_in, 4242 + left);
    if (strategy == "node_window") {
      // Across nodes each pair of nodes exchanges one message and nothing inside a node is
      // a message. With agents (the default while nodes - 1 <= 2 x the smallest node) the
      // pair (a, b)'s message leaves node a from its member (a + b) mod |a|; with leaders
      // (SPARSECOMM_SDDE_NODE_EXCHANGE=leaders) local index 0 sends its node's bundle to
      // every other node (dense pattern: every node is a destination).
      const Locality nodes = Locality::parse(MPI_COMM_WORLD, "node");
      int smallest = nodes.region_size(0);
      for (int r = 1; r < nodes.num_regions(); ++r) smallest = std::min(smallest, nodes.region_size(r));
      const char* how = std::getenv("SPARSECOMM_SDDE_NODE_EXCHANGE");
      const bool agents = how && *how && std::string(how) != "auto" ? std::string(how) == "agents"
                                                                    : nodes.num_regions() - 1 <= 2 * smallest;
      int64_t expect = 0;
      for (int r = 0; r < nodes.num_regions(); ++r)
        if (r != nodes.region())
          expect += agents ? ((nodes.region() + r) % nodes.local_size() == nodes.local_rank() ? 1 : 0)
                           : (nodes.local_rank() == 0 ? 1 : 0);
      EXPECT_EQ(stats.total().sent_inter.msgs + stats.total().sent_intra.msgs, expect);
    } else if (strategy.rfind("locality_", 0) == 0) {
      // Exactly one inter-region message per destination region other than mine (dense
      // pattern: every region is a destination), none inter-region in the redistribution.
      const auto& steps = stats.steps();
      const int64_t inter_sent = steps.count("inter") ? steps.at("inter").sent_inter.msgs : 0;
      EXPECT_EQ(inter_sent, loc.num_regions() - 1);
      EXPECT_EQ(stats.total().sent_inter.msgs, loc.num_regions() - 1);
      if (steps.count("intra")) {
        EXPECT_EQ(steps.at("intra").sent_inter.msgs, 0);
      }
    } else {
      // Direct strategies send one message per destination.
      int64_t expect_inter = 0;
      for (int d = 0; d < p; ++d) expect_inter += loc.same_region(d) ? 0 : 1;
      EXPECT_EQ(stats.total().sent_inter.msgs, expect_inter);
      EXPECT_EQ(stats.total().sent_intra.msgs + stats.total().sent_inter.msgs, p);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllStrategies, SddeConformance,
                         ::testing::Combine(::testing::ValuesIn(Sdde::strategies()), ::testing::ValuesIn(kRegions)),
                         [](const auto& info) {
                           std::string n = std::get<0>(info.param) + "_" + std::get<1>(info.param);
                           for (auto& c : n)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(SddeTyped, DoublesRoundTrip) {
  const int p = test::size(), me = test::rank();
  Sdde sdde(MPI_COMM_WORLD, Locality::ppn(MPI_COMM_WORLD, 2));
  SparseMessages<double> send;
  send.add((me + 1) % p, std::vector<double>{me + 0.5, -1.25});
  auto got = sdde.exchange(send, "locality_nbx");
  ASSERT_EQ(got.size(), 1u);
  const int src = (me + p - 1) % p;
  EXPECT_EQ(got.ranks[0], src);
  EXPECT_EQ(got.message(0), (std::vector<double>{src + 0.5, -1.25}));
}

// The locality-aware exchanges' redistribution through a region's shared-memory window
// (src/comm/sdde/common.hpp, RegionWindow) where the region lies within one node: messages from a few
// bytes to 720 KB (the window starts at 64 KiB per buffer and grows twice), alternating
// sizes so both buffers are reused, every value checked; and no intra-region message where
// the window carries the step.
TEST(SddeWindow, GrowsReusesAndReplacesMessages) {
  const int p = test::size(), me = test::rank();
  for (const std::string regions : {"ppn:2", "ppn:4", "flat"}) {
    Locality loc = Locality::parse(MPI_COMM_WORLD, regions);
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(loc.local_comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    const bool windowed = node_size == loc.local_size() && !std::getenv("SPARSECOMM_SDDE_WINDOW");
    Sdde sdde(MPI_COMM_WORLD, loc);
    const int sizes[] = {10, 40000, 5, 90000, 3, 1, 90000, 0};
    for (const std::string strategy : {"locality_personalized", "locality_nbx"}) {
      for (int round = 0; round < 8; ++round) {
        auto gen = [&](int s) {
          SparseMessages<int64_t> m;
          for (int k = 1; k <= std::min(p - 1, 3); ++k) {
            const int d = (s + k) % p;
            std::vector<int64_t> x(static_cast<size_t>(sizes[round] + k));
            for (size_t i = 0; i < x.size(); ++i) x[i] = s * 1000003LL + d * 1009LL + static_cast<int64_t>(i) + round;
            m.add(d, x);
          }
          return m;
        };
        Stats stats;
        auto got = sdde.exchange(gen(me), strategy, &stats);
        ASSERT_EQ(got, expected_for(me, p, gen)) << regions << " " << strategy << " round " << round;
        if (windowed) {
          const auto& steps = stats.steps();
          EXPECT_TRUE(!steps.count("intra") || steps.at("intra").sent_intra.msgs + steps.at("intra").sent_inter.msgs == 0)
              << regions << " " << strategy << ": the region is within one node, yet intra-region messages were sent";
        }
      }
    }
  }
}

// The SDDE windows under stress: 2,000 back-to-back exchanges (500 oversubscribed) on a
// one-way ring plus a message to self, sizes and values changing every call, each rank
// sleeping a random 0-40 us before some calls (odd ranks more often: even ranks run ahead
// into the next call and write the other buffer while slow ones still read). A stale, torn
// or overwritten read of the double-buffered segments fails it. node_window (the whole
// exchange through the node's window on one node), locality_personalized and locality_nbx
// in regions of 2 (the redistribution through each region's window; on the emulated
// cluster, from the second call, their inter-region step through the nodes' windows), and
// personalized and nbx (from the second call: the table and the barrier through the
// window's flags on one node, through the nodes' windows and their agents across nodes).
TEST(SddeWindow, JitteredBackToBackExchanges) {
  const int p = test::size(), me = test::rank();
  const auto& all = Sdde::strategies();
  if (std::find(all.begin(), all.end(), "node_window") == all.end()) GTEST_SKIP() << "no shared windows in this build";
  Sdde sdde(MPI_COMM_WORLD, Locality::parse(MPI_COMM_WORLD, "ppn:2"));
  std::mt19937 rng(static_cast<unsigned>(99 + 31 * me));
  std::uniform_int_distribution<int> delay(0, 40), coin(0, 9);
  const int iters = p <= 3 ? 2000 : 500;
  for (const std::string strategy : {"node_window", "locality_personalized", "locality_nbx", "personalized", "nbx"}) {
    long wrong = 0;
    for (int it = 0; it < iters; ++it) {
      auto gen = [&](int s) {
        SparseMessages<int64_t> m;
        for (int d : {s, (s + 1) % p}) {
          if (d == s && m.size() > 0) continue;  // (p = 1: one message, to itself)
          std::vector<int64_t> x(static_cast<size_t>(1 + (it * 7 + s) % 13));
          for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<int64_t>(s) << 40) + (static_cast<int64_t>(d) << 24) + it * 16 + static_cast<int64_t>(i);
          m.add(d, x);
        }
        return m;
      };
      if (coin(rng) < (me % 2 ? 3 : 0)) std::this_thread::sleep_for(std::chrono::microseconds(delay(rng)));
      const auto got = sdde.exchange(gen(me), strategy);
      wrong += got == expected_for(me, p, gen) ? 0 : 1;
    }
    EXPECT_EQ(wrong, 0) << strategy << ": wrong results in " << wrong << " of " << iters << " exchanges";
  }
}

// Bad input on ONE rank must make every rank throw the same error, and nobody hang.
void expect_all_throw_same(const std::function<void()>& f, const std::string& needle) {
  std::string msg;
  bool threw = false;
  try {
    f();
  } catch (const InputError& e) {
    threw = true;
    msg = e.what();
  }
  EXPECT_TRUE(threw);
  EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  // Same message on every rank: compare lengths and a checksum.
  long long h = static_cast<long long>(std::hash<std::string>{}(msg) & 0x7fffffffffffLL);
  long long mn = 0, mx = 0;
  MPI_Allreduce(&h, &mn, 1, MPI_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &mx, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(mn, mx) << "ranks threw different messages; mine: " << msg;
}

TEST(SddeErrors, BadInputOnOneRankThrowsEverywhere) {
  const int p = test::size(), me = test::rank();
  Sdde sdde(MPI_COMM_WORLD, Locality::ppn(MPI_COMM_WORLD, 2));
  const int bad = p - 1;  // the last rank misbehaves
  for (const auto& strategy : Sdde::strategies()) {
    const bool fixed = Sdde::fixed_size_only(strategy);
    auto call = [&](const SparseMessages<int64_t>& m) {
      if (fixed) sdde.exchange_fixed(m, 1, strategy);
      else sdde.exchange(m, strategy);
    };
    SparseMessages<int64_t> out_of_range;
    out_of_range.add(me == bad ? p + 3 : 0, std::vector<int64_t>{1});
    expect_all_throw_same([&] { call(out_of_range); }, "out of range");
    SparseMessages<int64_t> repeated;
    repeated.add(0, std::vector<int64_t>{1});
    if (me == bad) repeated.add(0, std::vector<int64_t>{2});
    expect_all_throw_same([&] { call(repeated); }, "two messages to rank 0");
    // The library still works after errors.
    SparseMessages<int64_t> ok;
    ok.add(me, std::vector<int64_t>{static_cast<int64_t>(me)});
    if (fixed) {
      EXPECT_EQ(sdde.exchange_fixed(ok, 1, strategy), ok);
    }
    else EXPECT_EQ(sdde.exchange(ok, strategy), ok);
  }
  SparseMessages<int64_t> wrong_size;
  wrong_size.add(0, std::vector<int64_t>(me == bad ? 2 : 1, 5));
  expect_all_throw_same([&] { sdde.exchange_fixed(wrong_size, 1, "nbx"); }, "fixed-size exchange of 1 elements");
  SparseMessages<int64_t> none;
  expect_all_throw_same([&] { sdde.exchange(none, "carrier_pigeon"); }, "valid strategies: personalized, nbx, rma");
  expect_all_throw_same([&] { sdde.exchange(none, "rma"); }, "fixed-size messages only");
  // Different strategies on different ranks (a collective-argument mismatch, like two ops
  // in one MPI_Allreduce) are detected only with the check on: one allreduce per call.
  if (p > 1) {
    Sdde checked(MPI_COMM_WORLD, Locality::ppn(MPI_COMM_WORLD, 2));
    checked.set_check_collective_args(true);
    expect_all_throw_same([&] { checked.exchange(none, me == bad ? "nbx" : "personalized"); },
                          "different strategies");
  }
}

// A failure on one rank while the others send messages larger than the windows: every
// window round grows the window also on the failure path (the table across nodes still
// reads the other rows then), every message sent is drained, every rank raises the same
// error, and the next exchanges (the window grown, or grown again) are right. Three calls
// per strategy on one Sdde: the second and third take the window paths.
TEST(SddeErrors, FailureWhileOthersOutgrowTheWindow) {
  const int p = test::size(), me = test::rank();
  Sdde sdde(MPI_COMM_WORLD, Locality::ppn(MPI_COMM_WORLD, 2));
  const int bad = p - 1;
  auto gen = [&](int s, int round) {
    SparseMessages<int64_t> m;
    for (int d : {(s + 1) % p, (s + p - 1) % p}) {
      if (m.size() > 0 && m.ranks.back() == d) continue;  // (p <= 2: one neighbour)
      std::vector<int64_t> x(static_cast<size_t>(20000 + 5000 * round + s));  // 160 KB and more: beyond a first window
      for (size_t i = 0; i < x.size(); ++i) x[i] = (static_cast<int64_t>(s) << 32) + static_cast<int64_t>(i) + round;
      m.add(d, x);
    }
    return m;
  };
  for (const auto& strategy : Sdde::strategies()) {
    if (Sdde::fixed_size_only(strategy)) continue;
    for (int round = 0; round < 3; ++round) {
      SparseMessages<int64_t> m = gen(me, round);
      if (me == bad) m.add(p + 7, std::vector<int64_t>{1});
      expect_all_throw_same([&] { sdde.exchange(m, strategy); }, "out of range");
      EXPECT_EQ(sdde.exchange(gen(me, round + 3), strategy), expected_for(me, p, [&](int s) { return gen(s, round + 3); }))
          << strategy << ", round " << round;
    }
  }
}

// node_window across nodes: SddeOptions::node_exchange (SPARSECOMM_SDDE_NODE_EXCHANGE)
// chooses agents or leaders at the first exchange; a value that is unknown, or not alike on
// every rank, is an error on every rank (and an Sdde with a good value works). Needs more
// than one node.
TEST(SddeErrors, NodeExchangeChoiceAgreed) {
  const auto& all = Sdde::strategies();
  if (std::find(all.begin(), all.end(), "node_window") == all.end()) GTEST_SKIP() << "no shared windows in this build";
  if (Locality::parse(MPI_COMM_WORLD, "node").num_regions() < 2) GTEST_SKIP() << "one node: no inter-node step";
  const int p = test::size(), me = test::rank();
  SparseMessages<int64_t> m;
  m.add((me + 1) % p, std::vector<int64_t>{me});
  auto expect = expected_for(me, p, [&](int s) {
    SparseMessages<int64_t> x;
    x.add((s + 1) % p, std::vector<int64_t>{s});
    return x;
  });
  const auto with = [](const std::string& how) {
    SddeOptions o;
    o.node_exchange = how;
    return Sdde(MPI_COMM_WORLD, Locality::ppn(MPI_COMM_WORLD, 2), o);
  };
  {
    Sdde sdde = with("sideways");
    expect_all_throw_same([&] { sdde.exchange(m, "node_window"); }, "valid values: agents, leaders, auto");
  }
  {
    Sdde sdde = with(me == p - 1 ? "leaders" : "agents");
    expect_all_throw_same([&] { sdde.exchange(m, "node_window"); }, "differs between ranks");
  }
  Sdde sdde = with("leaders");
  EXPECT_EQ(sdde.exchange(m, "node_window"), expect);
}

// ... and checked on one node too, where node_window has no inter-node step to use it: a
// value one rank got wrong is the same error on every rank, not silently ignored. Given as
// the environment variable, read by the entry point (test::set_env).
TEST(SddeErrors, NodeExchangeCheckedOnOneNode) {
  const auto& all = Sdde::strategies();
  if (std::find(all.begin(), all.end(), "node_window") == all.end()) GTEST_SKIP() << "no shared windows in this build";
  if (Locality::parse(MPI_COMM_WORLD, "node").num_regions() != 1) GTEST_SKIP() << "not one node";
  const int p = test::size(), me = test::rank();
  const test::EnvGuard keep("SPARSECOMM_SDDE_NODE_EXCHANGE");
  SparseMessages<int64_t> m;
  m.add((me + 1) % p, std::vector<int64_t>{me});
  test::set_env("SPARSECOMM_SDDE_NODE_EXCHANGE", me == p - 1 ? std::optional<std::string>("sideways") : std::nullopt);
  Sdde sdde(MPI_COMM_WORLD, Locality::ppn(MPI_COMM_WORLD, 2));
  expect_all_throw_same([&] { sdde.exchange(m, "node_window"); }, "'sideways': valid values: agents, leaders, auto");
}

}  // namespace
