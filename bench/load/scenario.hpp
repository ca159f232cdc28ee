#pragma once
// The snippets a load run sends, each with what a correct answer looks like, and the weighted
// mix a client draws them from.

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace callisto::load {

enum class snippet_kind { tiny, print, plot, fail, sleep, interrupt, oneshot };

struct snippet {
    snippet_kind kind;
    const char* name;
    std::string code;
    // What a correct answer has: status "ok" (and this in stdout or the text result), or an
    // error of this name. interrupt: Jupyter clients interrupt it once it runs; /v1 clients
    // give it a 0.3 s timeout (status "timeout").
    std::string expect_text;
    std::string expect_error;
    bool expect_image = false;
};

const snippet& snippet_of(snippet_kind kind);
std::map<std::string, int> default_mix();
// "tiny=60,print=10": nullopt for an unknown kind, a bad weight, or weights summing to 0.
std::optional<std::map<std::string, int>> parse_mix(const std::string& text);
std::string snippet_kinds();  // "tiny, print, ..."

class snippet_mix {
public:
    explicit snippet_mix(const std::map<std::string, int>& weights);
    snippet_kind draw(std::mt19937& random) const;

private:
    std::vector<snippet_kind> kinds_;
    std::discrete_distribution<std::size_t> pick_;
};

}  // namespace callisto::load
