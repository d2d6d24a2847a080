// The variant registry: every kernel variant of an op is one definition in one file under
// runtime/variants/<op>/, which registers itself with SPARSEJIT_REGISTER_VARIANT. The planner,
// the executor, the tuner, `bench` and `explain --list` iterate an op's registry; nothing else
// names a variant. The build generates the index that calls every file's registration
// (tools/variant_index.cmake scans runtime/variants/*/*.cpp for the macro), so adding a variant
// is its template, its definition file and its tests: no list to edit.
//
// Registration runs once, on the first use of any registry, from one thread (std::call_once);
// afterwards a registry is read-only and safe to share between threads.
#pragma once
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sparsejit::variants {

// What a variant says about itself, for the code that iterates the registry.
struct Traits {
  // Someone else's kernels (cuSPARSE): measured selection keeps it as the floor and `bench`
  // times it on its own, algorithm by algorithm.
  bool vendor = false;
  // Per-pattern preprocessing that pays only when the pattern is reused: the tuner measures
  // it with Options::reuse = Many, and the planner admits it only for reused patterns.
  bool needs_reuse = false;
  // Compiled for the architecture-specific target sm_XYa (wgmma): runs on that sm only.
  bool arch_specific = false;
  // The op's decision tree may name it as a leaf (the tuner trains trees over these).
  bool tree_leaf = true;

  // Builders for definitions: Traits{}.as_vendor(), Traits{}.reused_only().not_a_leaf().
  Traits as_vendor() const { Traits t = *this; t.vendor = true; return t; }
  Traits reused_only() const { Traits t = *this; t.needs_reuse = true; return t; }
  Traits for_one_arch() const { Traits t = *this; t.arch_specific = true; return t; }
  Traits not_a_leaf() const { Traits t = *this; t.tree_leaf = false; return t; }
};

// Fills every registry; defined in the generated index (build/generated/variant_index.cpp).
void register_every_variant();

// Runs register_every_variant once per process, whichever op's registry is used first: one
// flag for all of them, since the one call fills every op's registry (a flag per registry
// would register every variant again on the first use of each further op).
inline void ensure_every_variant_registered() {
  static std::once_flag once;
  std::call_once(once, register_every_variant);
}

// The registered definitions of one op: Definition is the op's variant base class
// (SpmmVariant, SddmmVariant), which has `name` and `rank` members.
template <class Definition>
class Registry {
 public:
  // Every variant of the op, by rank (ties by name): candidate lists, `explain --list` and
  // the search space keep this order, and equal predicted costs go to the earlier variant.
  static const std::vector<const Definition*>& all() {
    ensure_registered();
    return storage().sorted;
  }

  // The variant of this name, or nullptr.
  static const Definition* find(const std::string& name) {
    for (const Definition* d : all())
      if (d->name == name) return d;
    return nullptr;
  }

  static std::vector<std::string> names() {
    std::vector<std::string> out;
    for (const Definition* d : all()) out.push_back(d->name);
    return out;
  }

  // Called by the registration functions only (inside register_every_variant).
  static void add(std::unique_ptr<const Definition> definition) {
    Storage& s = storage();
    s.sorted.push_back(definition.get());
    s.owned.push_back(std::move(definition));
    std::stable_sort(s.sorted.begin(), s.sorted.end(), [](const Definition* a, const Definition* b) {
      return a->rank != b->rank ? a->rank < b->rank : a->name < b->name;
    });
  }

 private:
  struct Storage {
    std::vector<std::unique_ptr<const Definition>> owned;
    std::vector<const Definition*> sorted;
  };
  static Storage& storage() {
    static Storage s;
    return s;
  }
  static void ensure_registered() { ensure_every_variant_registered(); }
};

}  // namespace sparsejit::variants

// Registers `Type` (a class derived from an op's variant base, whose `Base` names that base)
// under the index name op_name. Use once per definition file, at global scope.
#define SPARSEJIT_REGISTER_VARIANT(op, name, Type)                                                  \
  void sparsejit_register_variant_##op##_##name() {                                                 \
    ::sparsejit::variants::Registry<Type::Base>::add(std::make_unique<const Type>());              \
  }
