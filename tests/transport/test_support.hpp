#pragma once
// Small helpers shared by the transport tests: the scratch directory and the polling the
// launcher tests use too.

#include "tests/support/eventually.hpp"
#include "tests/support/temp_dir.hpp"

namespace callisto::transport::testing {

using callisto::test::eventually;
using callisto::test::temp_dir;

}  // namespace callisto::transport::testing
