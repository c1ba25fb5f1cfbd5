// tsr_reference: runs the reference cases and prints one JSON object per line
// (tests/reference/README.md). `tsr_reference --list` prints the names only;
// further arguments run only the cases named.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "ref.h"

namespace ref {
namespace {

std::map<std::string, CaseFn>& registry() {
  static std::map<std::string, CaseFn> r;
  return r;
}
std::vector<std::string>* g_notes = nullptr;

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          o += b;
        } else {
          o += c;
        }
    }
  }
  return o + "\"";
}

std::string json_num(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The most derived tsr error class first, then its bases (JAX's class must be one).
std::string error_chain(const std::exception& e) {
  using namespace tsr;
  std::vector<std::string> c;
  auto is = [&](auto* p, const char* n) {
    if (p) c.push_back(n);
  };
  is(dynamic_cast<const TracerBoolConversionError*>(&e), "TracerBoolConversionError");
  is(dynamic_cast<const ConcretizationTypeError*>(&e), "ConcretizationTypeError");
  is(dynamic_cast<const IndivisibleError*>(&e), "IndivisibleError");
  is(dynamic_cast<const DuplicateSpecError*>(&e), "DuplicateSpecError");
  is(dynamic_cast<const ValueError*>(&e), "ValueError");
  is(dynamic_cast<const TypeError*>(&e), "TypeError");
  is(dynamic_cast<const ShardingTypeError*>(&e), "ShardingTypeError");
  is(dynamic_cast<const NotImplementedError*>(&e), "NotImplementedError");
  is(dynamic_cast<const AssertionError*>(&e), "AssertionError");
  is(dynamic_cast<const RuntimeError*>(&e), "RuntimeError");
  is(dynamic_cast<const IndexError*>(&e), "IndexError");
  is(dynamic_cast<const NameError*>(&e), "NameError");
  is(dynamic_cast<const CommError*>(&e), "CommError");
  is(dynamic_cast<const BackendError*>(&e), "BackendError");
  if (c.empty() && dynamic_cast<const Error*>(&e)) c.push_back("Error");
  if (c.empty()) c.push_back("UNTYPED");
  std::string s = "[";
  for (size_t i = 0; i < c.size(); ++i) s += (i ? "," : "") + json_str(c[i]);
  return s + "]";
}

std::string array_json(const tsr::Array& a) {
  std::ostringstream o;
  tsr::ArrayType t = a.type();
  const bool weak = t.weak;
  t.weak = false;
  o << "{\"type\":" << json_str(t.str()) << ",\"weak\":" << (weak ? "true" : "false");
  o << ",\"spec\":" << json_str(a.sharding().spec().normalized(a.ndim()).repr());
  o << ",\"values\":[";
  std::vector<double> v = a.astype(tsr::float64).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) o << (i ? "," : "") << json_num(v[i]);
  o << "]}";
  return o.str();
}

int run(const std::string& name, const CaseFn& fn) {
  std::vector<std::string> notes;
  g_notes = &notes;
  std::ostringstream o;
  o << "{\"name\":" << json_str(name);
  try {
    Outs outs = fn();
    std::vector<std::string> parts;
    for (const auto& n : notes) parts.push_back("{\"text\":" + json_str(n) + "}");
    for (const auto& r : outs)
      parts.push_back(r.is_text ? "{\"text\":" + json_str(r.text) + "}" : array_json(r.array));
    o << ",\"ok\":true,\"outputs\":[";
    for (size_t i = 0; i < parts.size(); ++i) o << (i ? "," : "") << parts[i];
    o << "]";
  } catch (const std::exception& e) {
    o << ",\"ok\":false,\"error\":" << error_chain(e) << ",\"message\":" << json_str(e.what());
    if (!notes.empty()) {
      o << ",\"notes\":[";
      for (size_t i = 0; i < notes.size(); ++i) o << (i ? "," : "") << json_str(notes[i]);
      o << "]";
    }
  }
  g_notes = nullptr;
  std::cout << o.str() << "}\n" << std::flush;
  return 0;
}

}  // namespace

bool add_case(const char* name, CaseFn fn) {
  if (!registry().emplace(name, std::move(fn)).second) {
    std::fprintf(stderr, "tsr_reference: case %s defined twice\n", name);
    std::abort();
  }
  return true;
}

std::vector<std::pair<std::string, CaseFn>> cases() {
  return {registry().begin(), registry().end()};
}

void note(const std::string& text) {
  if (g_notes) g_notes->push_back(text);
}

tsr::Array note_type(const tsr::Array& x) {
  tsr::ArrayType t = tsr::typeof(x);
  t.weak = false;  // JAX's printed type does not show weak types
  note(t.str());
  return x;
}

tsr::Mesh mesh(const std::vector<int>& sizes, const std::vector<std::string>& names,
               tsr::AxisType type) {
  return tsr::make_mesh(sizes, names, std::vector<tsr::AxisType>(names.size(), type));
}

}  // namespace ref

int main(int argc, char** argv) {
  tsr::init({.num_cpu_devices = 8});
  std::set<std::string> only;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--list")
      list = true;
    else
      only.insert(a);
  }
  for (const auto& [name, fn] : ref::cases()) {
    if (!only.empty() && !only.count(name)) continue;
    if (list)
      std::cout << name << "\n";
    else
      ref::run(name, fn);
  }
  return 0;
}
