#pragma once
// The zygote's Python helpers (launcher/zygote/zygote_helpers.py), compiled in.

#include <string_view>

namespace callisto::launcher::zygote {

std::string_view zygote_helpers_source();

}  // namespace callisto::launcher::zygote
