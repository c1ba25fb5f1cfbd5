#pragma once
// The JAX reference check (tests/reference/README.md): named programs run here and in
// JAX (cases_*.py, same names); compare.py compares values, printed types, concrete
// specs and error classes, allowing only the differences listed in differences.md.
#include <tsr/tsr.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ref {

/** One result of a case: an array (values, type, concrete spec) or a text (a type
 *  printed inside a body, a program's text). */
struct Out {
  Out(tsr::Array a) : array(std::move(a)) {}                 // NOLINT: implicit on purpose
  Out(std::string t) : text(std::move(t)), is_text(true) {}  // NOLINT
  Out(const char* t) : text(t), is_text(true) {}             // NOLINT
  tsr::Array array;
  std::string text;
  bool is_text = false;
};
using Outs = std::vector<Out>;
using CaseFn = std::function<Outs()>;

/** Registers a case (at static initialisation). */
bool add_case(const char* name, CaseFn fn);
/** Every registered case, in name order. */
std::vector<std::pair<std::string, CaseFn>> cases();

/** Texts a case records while it runs (a body's typeof): appended to its outputs. */
void note(const std::string& text);
/** The printed type of x, recorded as a note; returns x (for use inside bodies). */
tsr::Array note_type(const tsr::Array& x);

/** A mesh over the first prod(sizes) devices, every axis of `type`. */
tsr::Mesh mesh(const std::vector<int>& sizes, const std::vector<std::string>& names,
               tsr::AxisType type = tsr::AxisType::Explicit);

}  // namespace ref

#define REF_CAT2(a, b) a##b
#define REF_CAT(a, b) REF_CAT2(a, b)
/** Defines a case named `name` (the same name as its JAX twin in cases_*.py). */
#define REF_CASE(name)                                         \
  static ref::Outs REF_CAT(ref_case_, name)();                 \
  [[maybe_unused]] static const bool REF_CAT(ref_reg_, name) = \
      ref::add_case(#name, REF_CAT(ref_case_, name));          \
  static ref::Outs REF_CAT(ref_case_, name)()
