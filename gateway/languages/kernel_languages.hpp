#pragma once
// Which installed kernelspec runs which language: GET /v1/languages, and the kernel a context
// or one-shot execution gets when it names a language but no kernel. Pure.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gateway/languages/execution_language.hpp"
#include "launcher/kernelspec/kernelspec.hpp"

namespace callisto::gateway::languages {

bool kernel_runs(const launcher::kernelspec& spec, execution_language language);

// The kernel for `language`: the default kernel when it runs it, else the first kernelspec
// (by name) that does; nullopt when none does.
std::optional<std::string> kernel_for(execution_language language,
                                      const std::vector<launcher::kernelspec>& specs,
                                      const std::string& default_kernel);

// {"languages": [{"name", "kernel", "kernels"}...], "kernels": [{"name", "display_name",
// "language", "languages"}...], "default_kernel"}: every language, even one no kernel runs
// (its "kernel" null), so a client sees what this server lacks.
nlohmann::json languages_document(const std::vector<launcher::kernelspec>& specs,
                                  const std::string& default_kernel);

}  // namespace callisto::gateway::languages
