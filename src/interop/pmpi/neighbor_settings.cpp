// The PMPI layer's settings and per-communicator state (pmpi_neighbor.cpp: the layer).
#include "interop/pmpi/neighbor_internal.hpp"

namespace sparsecomm::pmpi::neighborhood {

// The settings that must be alike on every rank of a communicator, as (name, value): a
// plan is collective, and whether a call agrees, skips its agreement or takes the one-node
// exchange follows from them; shm_block_max too, since both ends of an edge in the one-node
// exchange decide by it whether a block is a message. SPARSECOMM_MPI_VERBOSE and node_area
// may differ (one prints, the other sizes a rank's own shared buffer, which readers learn at
// set-up).
std::vector<NamedValue> shared_settings(const Settings& s, bool disabled) {
  return {{"SPARSECOMM_MPI_DISABLE", disabled ? "1" : "0"},
          {"the backend (SPARSECOMM_MPI_BACKEND, sparsecomm_backend)", s.backend},
          {"the regions (SPARSECOMM_MPI_REGIONS, sparsecomm_regions)", s.regions},
          {"k (SPARSECOMM_MPI_K, sparsecomm_k)", std::to_string(s.k)},
          {"aware (SPARSECOMM_MPI_AWARE, sparsecomm_aware)", s.aware < 0 ? "default" : std::to_string(s.aware)},
          {"fixed counts (SPARSECOMM_MPI_FIXED_COUNTS, sparsecomm_fixed_counts)", s.fixed ? "1" : "0"},
          {"one_node (SPARSECOMM_MPI_ONE_NODE or _NODE_EXCHANGE, sparsecomm_one_node)", s.one_node},
          {"shm_block_max (SPARSECOMM_MPI_SHM_BLOCK_MAX, sparsecomm_shm_block_max)", std::to_string(s.shm_block_max)}};
}

void read_one_node(Settings* s, const std::string& name, const std::string& v) {
  if (std::find(std::begin(kOneNodeValues), std::end(kOneNodeValues), v) != std::end(kOneNodeValues)) {
    s->one_node = v;
  } else if (s->bad.empty()) {
    s->bad = name + "='" + v + "' is not one of exchange, shm, off";
  }
}

// The layer's settings from the environment, read once (Global). SPARSECOMM_MPI_NODE_EXCHANGE
// is the older switch for one_node (1: exchange, 0: shm), kept working; beside
// SPARSECOMM_MPI_ONE_NODE it must say the same.
void read_environment(Settings* s) {
  const auto get = [](const char* n) -> const char* {
    const char* v = std::getenv(n);
    return v && *v ? v : nullptr;
  };
  if (const char* v = get("SPARSECOMM_MPI_BACKEND")) s->backend = v;
  if (const char* v = get("SPARSECOMM_MPI_REGIONS")) s->regions = v;
  if (const char* v = get("SPARSECOMM_MPI_K")) read_int(&s->bad, "SPARSECOMM_MPI_K", v, &s->k);
  bool b = false;
  if (const char* v = get("SPARSECOMM_MPI_AWARE")) read_flag(&s->bad, "SPARSECOMM_MPI_AWARE", v, &b), s->aware = b;
  if (const char* v = get("SPARSECOMM_MPI_FIXED_COUNTS")) read_flag(&s->bad, "SPARSECOMM_MPI_FIXED_COUNTS", v, &s->fixed);
  const char* exchange = get("SPARSECOMM_MPI_NODE_EXCHANGE");
  bool on = true;
  if (exchange) read_flag(&s->bad, "SPARSECOMM_MPI_NODE_EXCHANGE", exchange, &on), s->one_node = on ? "exchange" : "shm";
  if (const char* v = get("SPARSECOMM_MPI_ONE_NODE")) {
    read_one_node(s, "SPARSECOMM_MPI_ONE_NODE", v);
    if (exchange && s->one_node != (on ? "exchange" : "shm") && s->bad.empty())
      s->bad = std::string("SPARSECOMM_MPI_NODE_EXCHANGE='") + exchange + "' contradicts SPARSECOMM_MPI_ONE_NODE='" +
               v + "' (NODE_EXCHANGE is the older name: 1 is exchange, 0 is shm; set only ONE_NODE)";
  }
  if (const char* v = get("SPARSECOMM_MPI_SHM_BLOCK_MAX"))
    read_bytes(&s->bad, "SPARSECOMM_MPI_SHM_BLOCK_MAX", v, 0, kNodeAreaMax, &s->shm_block_max);
  if (const char* v = get("SPARSECOMM_MPI_NODE_AREA"))
    read_bytes(&s->bad, "SPARSECOMM_MPI_NODE_AREA", v, 1, kNodeAreaMax, &s->node_area);
}

Global& global() {
  static Global g;
  return g;
}

void normalize(Neighbors& nb, int me) {
  const auto uniq = [me](const std::vector<int>& v) {
    std::vector<int> u;
    for (int r : v)
      if (r != me && r != MPI_PROC_NULL) u.push_back(r);
    std::sort(u.begin(), u.end());
    u.erase(std::unique(u.begin(), u.end()), u.end());
    return u;
  };
  const auto distinct = [](std::vector<int> v) {
    v.erase(std::remove(v.begin(), v.end(), MPI_PROC_NULL), v.end());
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  nb.uniq_src = uniq(nb.sources);
  nb.uniq_dst = uniq(nb.destinations);
  for (int r : nb.sources)
    nb.src_slot.push_back(r == MPI_PROC_NULL ? kNull
                          : r == me          ? kSelf
                                             : static_cast<int>(std::lower_bound(nb.uniq_src.begin(), nb.uniq_src.end(), r) -
                                                                nb.uniq_src.begin()));
  nb.src_identity = nb.sources == nb.uniq_src;
  nb.pairs_unique = distinct(nb.sources) && distinct(nb.destinations);
  const auto first_self = [me](const std::vector<int>& v) {
    auto it = std::find(v.begin(), v.end(), me);
    return it == v.end() ? -1 : static_cast<int>(it - v.begin());
  };
  nb.self_src = first_self(nb.sources);
  nb.self_dst = first_self(nb.destinations);
}

// MPI's neighbor lists of a topology communicator (MPI-3.1 section 7.6): a distributed
// graph's in and out lists; a graph's neighbors both ways; a Cartesian grid's, for each
// dimension, the rank at -1 then the rank at +1 (MPI_PROC_NULL past a non-periodic border).
bool read_neighbors(MPI_Comm comm, int topo, Neighbors* nb) {
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  if (topo == MPI_DIST_GRAPH) {
    int in = 0, out = 0, weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
    nb->sources.resize(static_cast<size_t>(in));
    nb->destinations.resize(static_cast<size_t>(out));
    std::vector<int> sw(static_cast<size_t>(in) + 1), dw(static_cast<size_t>(out) + 1);
    PMPI_Dist_graph_neighbors(comm, in, nb->sources.data(), sw.data(), out, nb->destinations.data(), dw.data());
  } else if (topo == MPI_GRAPH) {
    int n = 0;
    PMPI_Graph_neighbors_count(comm, me, &n);
    nb->sources.resize(static_cast<size_t>(n));
    PMPI_Graph_neighbors(comm, me, n, nb->sources.data());
    nb->destinations = nb->sources;
  } else if (topo == MPI_CART) {
    int nd = 0;
    PMPI_Cartdim_get(comm, &nd);
    for (int d = 0; d < nd; ++d) {
      int lo = MPI_PROC_NULL, hi = MPI_PROC_NULL;
      PMPI_Cart_shift(comm, d, 1, &lo, &hi);
      nb->sources.push_back(lo);
      nb->sources.push_back(hi);
    }
    nb->destinations = nb->sources;
  } else {
    return false;
  }
  normalize(*nb, me);
  return true;
}


int delete_plans(MPI_Comm, int, void* value, void*) {
  Global& g = global();
  if (g.last_plans == value) g.last_comm = MPI_COMM_NULL, g.last_plans = nullptr;
  for (auto& e : g.settled)
    if (e.plans == value) e = Global::Settled{};
  delete static_cast<std::shared_ptr<CommPlans>*>(value);
  return MPI_SUCCESS;
}

// The communicator's sparsecomm_* info keys: as the layer recorded them at its creation
// (comm_info.hpp: MPICH's MPI_Comm_get_info drops user keys), else as MPI returns them.
void apply_info(MPI_Comm comm, Settings* s) {
  static const char* const kKeys[] = {"sparsecomm_fixed_counts", "sparsecomm_backend",       "sparsecomm_regions",
                                      "sparsecomm_k",            "sparsecomm_aware",         "sparsecomm_one_node",
                                      "sparsecomm_shm_block_max", "sparsecomm_node_area"};
  std::map<std::string, std::string> keys;
  if (!recorded_info(comm, &keys)) {
    MPI_Info info = MPI_INFO_NULL;
    if (PMPI_Comm_get_info(comm, &info) != MPI_SUCCESS || info == MPI_INFO_NULL) return;
    for (auto& kv : interop::sparsecomm_keys(info)) keys.insert(kv);
    PMPI_Info_free(&info);
  }
  // A sparsecomm_ key the layer does not know is a mistyped setting (the C API rejects one
  // too), never ignored.
  for (const auto& kv : keys)
    if (std::none_of(std::begin(kKeys), std::end(kKeys), [&](const char* k) { return kv.first == k; }) &&
        s->bad.empty()) {
      std::string known;
      for (const char* k : kKeys) known += std::string(known.empty() ? "" : ", ") + k;
      s->bad = "MPI_Info key '" + kv.first + "' is not one of the layer's (" + known + ")";
    }
  const auto get = [&keys](const char* key, std::string* out) {
    const auto it = keys.find(key);
    if (it == keys.end()) return false;
    *out = it->second;
    return true;
  };
  std::string v;
  if (get("sparsecomm_fixed_counts", &v)) read_flag(&s->bad, "MPI_Info sparsecomm_fixed_counts", v, &s->fixed);
  if (get("sparsecomm_backend", &v)) s->backend = v;
  if (get("sparsecomm_regions", &v)) s->regions = v;
  if (get("sparsecomm_k", &v)) read_int(&s->bad, "MPI_Info sparsecomm_k", v, &s->k);
  bool b = false;
  if (get("sparsecomm_aware", &v)) read_flag(&s->bad, "MPI_Info sparsecomm_aware", v, &b), s->aware = b;
  if (get("sparsecomm_one_node", &v)) read_one_node(s, "MPI_Info sparsecomm_one_node", v);
  if (get("sparsecomm_shm_block_max", &v))
    read_bytes(&s->bad, "MPI_Info sparsecomm_shm_block_max", v, 0, kNodeAreaMax, &s->shm_block_max);
  if (get("sparsecomm_node_area", &v)) read_bytes(&s->bad, "MPI_Info sparsecomm_node_area", v, 1, kNodeAreaMax, &s->node_area);
}

// This communicator's entry, created at its first call (local: no communication).
std::shared_ptr<CommPlans> plans_of(Global& g, MPI_Comm comm) {
  if (comm == g.last_comm && g.last_plans) return *g.last_plans;
  if (g.keyval == MPI_KEYVAL_INVALID) PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_plans, &g.keyval, nullptr);
  void* v = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(comm, g.keyval, &v, &found);
  if (found) {
    g.last_comm = comm, g.last_plans = static_cast<std::shared_ptr<CommPlans>*>(v);
    return *g.last_plans;
  }
  auto p = std::make_shared<CommPlans>();
  int inter = 0, topo = MPI_UNDEFINED;
  PMPI_Comm_test_inter(comm, &inter);
  if (!inter) PMPI_Topo_test(comm, &topo);
  p->usable = !inter && read_neighbors(comm, topo, &p->nb);
  p->settings = g.env;
  apply_info(comm, &p->settings);
  // (where the layer is off on every rank nothing else matters)
  p->shared_hash = settings_hash(g.disabled ? std::vector<NamedValue>{{"", "disabled"}} : shared_settings(p->settings, false));
  auto* slot = new std::shared_ptr<CommPlans>(p);
  PMPI_Comm_set_attr(comm, g.keyval, slot);
  g.last_comm = comm, g.last_plans = slot;
  return p;
}

}  // namespace sparsecomm::pmpi::neighborhood
