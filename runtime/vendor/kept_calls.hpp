// The prepared vendor calls of one plan, one per set of operand arrays: cuSPARSE binds the
// arrays when a call is prepared, so a call on other arrays needs a call of its own. A caller
// whose arrays change on every call (a fresh output each time) would grow the set without end:
// past kMaxKept calls the kept ones are all dropped and the new one prepared alone.
#pragma once

#include <cstddef>
#include <map>
#include <memory>

namespace sparsejit::vendor {

template <class Key, class Call>
class KeptCalls {
 public:
  // The call kept for `key`, prepared by make() (a std::unique_ptr<Call>) when there is none.
  // A make() that throws leaves the kept calls as they were.
  template <class Make>
  Call& get(const Key& key, Make&& make) {
    auto it = calls_.find(key);
    if (it == calls_.end()) {
      std::unique_ptr<Call> made = make();
      if (calls_.size() >= kMaxKept) calls_.clear();
      it = calls_.emplace(key, std::move(made)).first;
    }
    return *it->second;
  }

 private:
  static constexpr std::size_t kMaxKept = 8;
  std::map<Key, std::unique_ptr<Call>> calls_;
};

}  // namespace sparsejit::vendor
