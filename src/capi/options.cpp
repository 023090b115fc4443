// The sparsecomm_* options of the C API's calls: info keys, their defaults and sources,
// and the canonical form and hash by which ranks check that they passed the same.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "capi_internal.hpp"
#include "core/parse.hpp"

namespace sparsecomm::capi {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// FNV-1a over bytes fed piecewise: fnv(a + b) == Fnv().add(a).add(b).h.
struct Fnv {
  uint64_t h = 1469598103934665603ull;
  Fnv& add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return *this;
  }
  Fnv& add(int64_t v) {
    char buf[24];
    const int n = std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    return add(std::string_view(buf, static_cast<size_t>(n)));
  }
};

// The options every registered backend (alltoallv- and allgather-shaped) declares, each once.
std::vector<OptionSpec> declared_options() {
  std::vector<OptionSpec> specs;
  for (const auto& b : backend_names())
    for (const auto& s : backend_hooks(b).options)
      if (!declares_option(specs, s.key)) specs.push_back(s);
  for (const auto& b : gather_backend_names())
    for (const auto& s : gather_backend_hooks(b).options)
      if (!declares_option(specs, s.key)) specs.push_back(s);
  return specs;
}

}  // namespace

uint64_t fnv(const std::string& s) { return Fnv().add(s).h; }

void check_names(const std::string& what, const std::string& name, const std::vector<std::string>& valid) {
  if (std::find(valid.begin(), valid.end(), name) != valid.end()) return;
  // ("SDDE strategy": strategies, not "strategys")
  const std::string plural = !what.empty() && what.back() == 'y' ? what.substr(0, what.size() - 1) + "ies" : what + "s";
  fail(SPC_ERR_NOT_FOUND, "unknown " + what + " '" + name + "'; valid " + plural + ": " + join(valid));
}

void Options::set(const std::string& key, const std::string& raw) {
  const std::string v = trim(raw);
  auto bad = [&](const std::string& why) { fail(SPC_ERR_INFO_VALUE, "info key " + key + ": '" + raw + "' " + why); };
  std::string* field = key == "sparsecomm_backend" ? &backend
                       : key == "sparsecomm_sdde"    ? &sdde
                       : key == "sparsecomm_regions" ? &regions
                                                     : nullptr;
  if (field) {
    if (v.empty()) bad("is empty");
    *field = v;
  } else if (key == "sparsecomm_persistent") {
    if (!parse_bool(v, persistent)) bad("is not a boolean (true/false, 1/0, yes/no, on/off)");
  } else {
    // sparsecomm_<option>: an option some registered backend declares (BackendHooks::options;
    // "combined": k, theta, aware, rounds), checked against that declaration here and
    // against the chosen backend's when a call uses it. Each call keeps the options its
    // backend declares and ignores the others, as it ignores keys it does not use.
    const std::string name = key.substr(std::string("sparsecomm_").size());
    const std::vector<OptionSpec> specs = declared_options();
    auto spec = std::find_if(specs.begin(), specs.end(), [&](const OptionSpec& s) { return s.key == name; });
    if (spec == specs.end()) {
      std::string list = "sparsecomm_backend, sparsecomm_sdde, sparsecomm_regions, sparsecomm_persistent";
      for (const auto& s : specs)
        if (s.kind != OptionSpec::Kind::object) list += ", sparsecomm_" + s.key;
      fail(SPC_ERR_INFO_KEY, "unknown info key '" + key + "'; sparsecomm keys: " + list);
    }
    const std::string why = option_value_error(*spec, v);
    if (!why.empty()) fail(SPC_ERR_INFO_VALUE, "info key " + key + ": " + why);
    backend_opts.set(name, v);
  }
}

void Options::complete(const char* kind, bool (*registered)(const std::string&), std::vector<std::string> (*names)()) {
  if (backend.empty()) backend = interop::default_backend(interop::EntryPoint::capi);
  if (sdde.empty()) sdde = "nbx";
  if (!registered(backend)) check_names(kind, backend, names());  // the list: on failure only
  check_names("SDDE strategy", sdde, Sdde::strategies());
  if (Sdde::fixed_size_only(sdde))
    fail(SPC_ERR_INFO_VALUE, "sparsecomm_sdde: strategy '" + sdde + "' handles fixed-size messages only");
}

BackendOptions Options::backend_options_for(const std::vector<std::string>& names, const std::string& b,
                                            std::vector<OptionSpec> (*specs)(const std::string&)) const {
  // An unknown backend name keeps nothing: the plan's own collective check reports it.
  if (std::find(names.begin(), names.end(), b) == names.end()) return {};
  return backend_opts.only(specs(b));
}

void Options::apply(MPI_Info info) {
  int rc = MPI_SUCCESS;
  for (const auto& [k, v] : interop::sparsecomm_keys(info, &rc)) set(k, v);  // (other keys ignored, as MPI does)
  SPC_MPI(rc);
}

// The canonical form of `o`, piece by piece to put(std::string_view): one description for
// canonical() (the pieces joined) and options_hash() (the pieces hashed as they come).
template <class Put>
void canonical_pieces(const Options& o, Put&& put) {
  put("backend="), put(o.backend), put("|sdde="), put(o.sdde), put("|regions="), put(o.regions);
  put("|persistent="), put(o.persistent ? "1" : "0"), put("|");
  if (!o.backend_opts.empty()) put(o.backend_opts.canonical());
}

std::string Options::canonical() const {
  std::string s;
  canonical_pieces(*this, [&](std::string_view piece) { s += piece; });
  return s;
}

// fnv(canonical() + shape + esz + suffix) without building the string (a persistent
// init's hot path): the same bytes, so the same hash.
uint64_t options_hash(const Options& o, std::string_view shape, int64_t esz, std::string_view suffix) {
  Fnv f;
  canonical_pieces(o, [&](std::string_view piece) { f.add(piece); });
  return f.add(shape).add(esz).add(suffix).h;
}

Options OptionSource::resolve() const {
  Options o = base;
  for (const auto& [k, v] : pairs) o.set(k, v);
  o.apply(info);
  return o;
}

Locality make_locality(MPI_Comm comm, const std::string& spec) {
  try {
    return Locality::parse(comm, spec);
  } catch (const InputError& e) {
    fail(SPC_ERR_INFO_VALUE, std::string("sparsecomm_regions: ") + e.what());
  }
}

}  // namespace sparsecomm::capi
