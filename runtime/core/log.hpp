// Logging lives in base/ (below runtime/ and cache/, which both log); this header keeps the
// runtime's existing "core/log.hpp" includes working.
#pragma once
#include "base/log.hpp"
