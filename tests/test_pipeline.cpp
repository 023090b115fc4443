// The interposition layers' shared steps (src/interop/common/pipeline.hpp): the defaults
// table, validation against the registry, the agreement of checks and settings, and the
// plan cache's fingerprints and lifetime.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interop/common/pipeline.hpp"
#include "sparsecomm/comm/plan/plan.hpp"
#include "test_util.hpp"

using namespace sparsecomm;
using interop::EntryPoint;

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Pipeline, DefaultsZeroCodeLayersAutoExplicitApisP2p) {
  for (EntryPoint e : {EntryPoint::petsc_sf, EntryPoint::hypre_hook, EntryPoint::pmpi})
    EXPECT_EQ(std::string(interop::default_backend(e)), kInterposedDefaultBackend);
  for (EntryPoint e : {EntryPoint::petsc_mat, EntryPoint::capi})
    EXPECT_EQ(std::string(interop::default_backend(e)), kDefaultBackend);
  const interop::PlanSettings s(EntryPoint::capi);
  EXPECT_EQ(s.regions, "node");
  EXPECT_EQ(s.sdde, "nbx");
  EXPECT_EQ(s.options, "");
}

const interop::SettingNames kNames = {"B", "R", "S", "O"};

TEST(Pipeline, ValidateNamesTheSettingThatIsBad) {
  interop::PlanSettings s(EntryPoint::petsc_sf);
  s.backend = "p2p";
  EXPECT_NO_THROW(interop::validate(s, kNames, test::size()));
  s.options = "no_such_option=1";
  EXPECT_TRUE(has(test::message_of<InputError>([&] { interop::validate(s, kNames); }), "O: "));
  s.options = "";
  s.regions = "bogus";
  EXPECT_NO_THROW(interop::validate(s, kNames));  // regions checked only when asked
  EXPECT_TRUE(has(test::message_of<InputError>([&] { interop::validate(s, kNames, test::size()); }), "R: "));
  s.backend = "no_such_backend";
  EXPECT_THROW(interop::validate(s, kNames), InputError);
  s.backend = "p2p", s.sdde = "no_such_strategy";
  EXPECT_THROW(interop::validate(s, kNames), InputError);
  EXPECT_NO_THROW(interop::validate(s, {"B", "R", nullptr, "O"}));  // not a setting there
  // auto's in-place tuning passes through these layers (its starts stay local, tune.cpp),
  // its options checked like any other backend option.
  s = interop::PlanSettings(EntryPoint::petsc_sf);
  s.backend = "auto", s.options = "tune=measure,samples=2,candidates=1,iterations=1000";
  EXPECT_NO_THROW(interop::validate(s, kNames));
  s.options = "tune=model";
  EXPECT_NO_THROW(interop::validate(s, kNames));
  s.options = "tune=measure,samples=0";
  EXPECT_TRUE(has(test::message_of<InputError>([&] { interop::validate(s, kNames); }), "O: "));
}

TEST(Pipeline, NamedInLayerOrder) {
  interop::PlanSettings s(EntryPoint::hypre_hook);
  const auto v = interop::named(s, {"B", "R", nullptr, "O"});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].name, "B");
  EXPECT_EQ(v[2].name, "O");
  EXPECT_EQ(interop::named(s, kNames).size(), 4u);
}

TEST(Pipeline, AgreeCheckedOneRankFailsOrDiffers) {
  const int p = test::size(), last = p - 1;
  EXPECT_NO_THROW(interop::agree_checked(MPI_COMM_WORLD, [] {}, {{"x", "1"}}, "where"));
  const std::string failed = test::message_of<InputError>([&] {
    interop::agree_checked(MPI_COMM_WORLD, [&] {
      if (test::rank() == last) throw InputError("bad thing");
    });
  });
  EXPECT_TRUE(has(failed, "bad thing")) << failed;
  if (p < 2) return;
  const std::string differ = test::message_of<InputError>([&] {
    interop::agree_checked(MPI_COMM_WORLD, [] {}, {{"x", test::rank() == last ? "2" : "1"}}, "where");
  });
  EXPECT_TRUE(has(differ, "settings differ between ranks")) << differ;
  EXPECT_TRUE(has(differ, "(where)")) << differ;
}

TEST(Pipeline, ReadersKeepTheFirstBadValue) {
  std::string bad;
  bool b = false;
  interop::read_flag(&bad, "F", "yes", &b);
  EXPECT_TRUE(b);
  EXPECT_EQ(bad, "");
  interop::read_flag(&bad, "F", "maybe", &b);
  EXPECT_EQ(bad, "F='maybe' is not a boolean (true/false, 1/0, yes/no, on/off)");
  int i = 3;
  interop::read_int(&bad, "I", "x", &i);  // a second bad value: the first one stays
  EXPECT_EQ(i, 3);
  EXPECT_TRUE(has(bad, "F='maybe'"));
  std::string bad2;
  int64_t n = 0;
  interop::read_bytes(&bad2, "N", "0", 1, 10, &n);
  EXPECT_EQ(bad2, "N='0' is not a number of bytes from 1 to 10");
  interop::read_bytes(&bad2, "N", "10", 1, 10, &n);
  EXPECT_EQ(n, 10);
}

struct Fp {
  int v = 0;
  bool operator==(const Fp& o) const { return v == o.v; }
};

TEST(Pipeline, CacheBuildsOnceChecksFingerprintsAndRetires) {
  std::vector<int> retired;
  interop::PlanCache<int, int, Fp> cache([&](const int& e) { retired.push_back(e); });
  int builds = 0;
  EXPECT_EQ(cache.get(1, [&] { return ++builds * 10; }, Fp{7}), 10);
  EXPECT_EQ(cache.get(1, [&] { return ++builds * 10; }, Fp{7}), 10);  // found
  EXPECT_EQ(builds, 1);
  const Fp eight{8};
  EXPECT_EQ(cache.find(1, &eight), nullptr);  // built from something else: stale
  ASSERT_NE(cache.find(1), nullptr);         // ... but still there, until replaced or dropped
  EXPECT_EQ(cache.get(1, [&] { return ++builds * 10; }, Fp{8}), 20);  // rebuilt; the stale one retired
  EXPECT_EQ(retired, std::vector<int>{10});
  cache.put(2, 30);
  cache.drop(1);
  EXPECT_EQ(retired, (std::vector<int>{10, 20}));
  cache.drop(1);  // nothing there: nothing retired
  cache.clear();
  EXPECT_EQ(retired, (std::vector<int>{10, 20, 30}));
  EXPECT_TRUE(cache.slots().empty());
}

}  // namespace
