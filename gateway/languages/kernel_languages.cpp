#include "gateway/languages/kernel_languages.hpp"

#include <algorithm>

namespace callisto::gateway::languages {

namespace {

std::vector<const launcher::kernelspec*> by_name(const std::vector<launcher::kernelspec>& specs) {
    std::vector<const launcher::kernelspec*> sorted;
    for (const auto& spec : specs) sorted.push_back(&spec);
    std::sort(sorted.begin(), sorted.end(),
              [](const auto* a, const auto* b) { return a->name < b->name; });
    return sorted;
}

}  // namespace

bool kernel_runs(const launcher::kernelspec& spec, execution_language language) {
    const auto all = languages_run_by(dialect_of(spec.language));
    return std::find(all.begin(), all.end(), language) != all.end();
}

std::optional<std::string> kernel_for(execution_language language,
                                      const std::vector<launcher::kernelspec>& specs,
                                      const std::string& default_kernel) {
    for (const auto& spec : specs)
        if (spec.name == default_kernel && kernel_runs(spec, language)) return spec.name;
    for (const auto* spec : by_name(specs))
        if (kernel_runs(*spec, language)) return spec->name;
    return std::nullopt;
}

nlohmann::json languages_document(const std::vector<launcher::kernelspec>& specs,
                                  const std::string& default_kernel) {
    nlohmann::json languages = nlohmann::json::array();
    for (auto language : all_execution_languages()) {
        nlohmann::json kernels = nlohmann::json::array();
        for (const auto* spec : by_name(specs))
            if (kernel_runs(*spec, language)) kernels.push_back(spec->name);
        auto kernel = kernel_for(language, specs, default_kernel);
        languages.push_back({{"name", to_string(language)},
                             {"kernel", kernel ? nlohmann::json(*kernel) : nlohmann::json()},
                             {"kernels", std::move(kernels)}});
    }
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto* spec : by_name(specs))
        kernels.push_back(
            {{"name", spec->name},
             {"display_name", spec->display_name},
             {"language", spec->language},
             {"languages", language_names(languages_run_by(dialect_of(spec->language)))}});
    return {{"languages", std::move(languages)},
            {"kernels", std::move(kernels)},
            {"default_kernel", default_kernel}};
}

}  // namespace callisto::gateway::languages
