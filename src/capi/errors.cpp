// The C API's error protocol (capi_internal.hpp): coded messages, the calling thread's last
// error, and SPC_Error_string, which reads it back.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "capi_internal.hpp"
#include "core/parse.hpp"

namespace sparsecomm::capi {
namespace {
constexpr const char* kTagOpen = "[[spc:";

thread_local int tl_code = SPC_SUCCESS;
thread_local std::string tl_message;

// "... [[spc:N]] text ..." -> N and the text without the tag.
bool untag(const std::string& what, int& code, std::string& text) {
  const size_t pos = what.find(kTagOpen);
  if (pos == std::string::npos) return false;
  const size_t num = pos + std::strlen(kTagOpen);
  const size_t end = what.find("]]", num);
  if (end == std::string::npos) return false;
  int64_t v = 0;
  if (!parse_int(what.substr(num, end - num), v)) return false;
  code = static_cast<int>(v);
  size_t after = end + 2;
  if (after < what.size() && what[after] == ' ') ++after;
  text = what.substr(0, pos) + what.substr(after);
  return true;
}

int classify(const char* what, int fallback) {
  int code = fallback;
  std::string text;
  if (untag(what, code, text)) return record_error(code, text);
  return record_error(fallback, what);
}

}  // namespace

std::string coded(int code, const std::string& message) {
  return std::string(kTagOpen) + std::to_string(code) + "]] " + message;
}

const char* const kListsMismatch =
    "inconsistent neighbor lists: some rank lists a destination that does not list it as a source "
    "(or lists it a different number of times)";

void fail(int code, const std::string& message) {
  throw InputError(coded(code, message));
}

int record_error(int code, const std::string& message) noexcept {
  try {
    tl_message = message;
  } catch (...) {
    tl_message.clear();
  }
  tl_code = code;
  return code;
}

int record_current_exception() noexcept {
  try {
    try {
      throw;
    } catch (const MpiError& e) {
      return classify(e.what(), e.code() == MPI_SUCCESS ? MPI_ERR_OTHER : e.code());
    } catch (const NotImplementedError& e) {
      return classify(e.what(), SPC_ERR_NOT_IMPLEMENTED);
    } catch (const InputError& e) {
      return classify(e.what(), SPC_ERR_ARG);
    } catch (const std::bad_alloc&) {
      return record_error(MPI_ERR_NO_MEM, "sparsecomm: out of memory");
    } catch (const std::exception& e) {
      return classify(e.what(), SPC_ERR_INTERNAL);
    } catch (...) {
      return record_error(SPC_ERR_INTERNAL, "sparsecomm: unknown exception");
    }
  } catch (...) {
    return SPC_ERR_INTERNAL;
  }
}

std::string current_exception_coded() {
  const int code = record_current_exception();
  return coded(code, tl_message);
}

}  // namespace sparsecomm::capi

namespace {

std::string generic_message(int code) {
  switch (code) {
    case SPC_SUCCESS: return "no error";
    case SPC_ERR_ARG: return "sparsecomm: invalid argument";
    case SPC_ERR_NOT_FOUND: return "sparsecomm: unknown backend or SDDE strategy name";
    case SPC_ERR_INFO_KEY: return "sparsecomm: unknown sparsecomm_* info key";
    case SPC_ERR_INFO_VALUE: return "sparsecomm: malformed value of a sparsecomm_* info key";
    case SPC_ERR_MISMATCH: return "sparsecomm: ranks disagree (options, neighbor lists, counts or ids)";
    case SPC_ERR_REQUEST: return "sparsecomm: invalid request or request state";
    case SPC_ERR_NOT_IMPLEMENTED: return "sparsecomm: not implemented";
    case SPC_ERR_INTERNAL: return "sparsecomm: internal error";
    default: break;
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (code > 0 && code < SPC_ERR_BASE && initialized && !finalized) {
    int* last = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    const int lastcode = (flag && last) ? *last : MPI_ERR_LASTCODE;
    if (code <= std::max(lastcode, static_cast<int>(MPI_ERR_LASTCODE))) {
      char buf[MPI_MAX_ERROR_STRING];
      int len = 0;
      if (MPI_Error_string(code, buf, &len) == MPI_SUCCESS) return std::string(buf, static_cast<size_t>(len));
    }
  }
  return "unknown error code " + std::to_string(code);
}

}  // namespace

extern "C" int SPC_Error_string(int code, char* string, int* resultlen) {
  if (!string || !resultlen) return SPC_ERR_ARG;
  try {
    std::string msg = (code != SPC_SUCCESS && code == sparsecomm::capi::tl_code && !sparsecomm::capi::tl_message.empty())
                          ? sparsecomm::capi::tl_message
                          : generic_message(code);
    if (msg.size() > SPC_MAX_ERROR_STRING - 1) msg.resize(SPC_MAX_ERROR_STRING - 1);
    std::memcpy(string, msg.c_str(), msg.size() + 1);
    *resultlen = static_cast<int>(msg.size());
    return SPC_SUCCESS;
  } catch (...) {
    string[0] = '\0';
    *resultlen = 0;
    return SPC_ERR_INTERNAL;
  }
}
