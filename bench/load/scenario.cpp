#include "scenario.hpp"

#include <array>
#include <charconv>
#include <sstream>

namespace callisto::load {

namespace {

const std::array<snippet, 7>& snippets() {
    static const std::array<snippet, 7> all = {{
        {snippet_kind::tiny, "tiny", "6 * 7", "42", "", false},
        {snippet_kind::print, "print", "for i in range(200):\n    print('line', i)", "line 199", "",
         false},
        {snippet_kind::plot, "plot",
         "import io\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
         "from IPython.display import Image, display\n"
         "fig = plt.figure(figsize=(2, 2))\nplt.plot([1, 3, 2])\nbuf = io.BytesIO()\n"
         "fig.savefig(buf, format='png')\nplt.close(fig)\ndisplay(Image(buf.getvalue()))",
         "", "", true},
        {snippet_kind::fail, "fail", "1 / 0", "", "ZeroDivisionError", false},
        {snippet_kind::sleep, "sleep", "import time\ntime.sleep(0.2)\nprint('slept')", "slept", "",
         false},
        {snippet_kind::interrupt, "interrupt", "import time\ntime.sleep(30)", "",
         "KeyboardInterrupt", false},
        {snippet_kind::oneshot, "oneshot", "print(6 * 7)", "42", "", false},
    }};
    return all;
}

const snippet* find(const std::string& name) {
    for (const auto& s : snippets())
        if (name == s.name) return &s;
    return nullptr;
}

}  // namespace

const snippet& snippet_of(snippet_kind kind) { return snippets()[static_cast<std::size_t>(kind)]; }

std::map<std::string, int> default_mix() {
    return {{"tiny", 60},  {"print", 10},    {"plot", 5},   {"fail", 10},
            {"sleep", 10}, {"interrupt", 3}, {"oneshot", 2}};
}

std::optional<std::map<std::string, int>> parse_mix(const std::string& text) {
    std::map<std::string, int> mix;
    std::istringstream parts(text);
    int total = 0;
    for (std::string part; std::getline(parts, part, ',');) {
        const auto eq = part.find('=');
        if (eq == std::string::npos || !find(part.substr(0, eq))) return std::nullopt;
        int weight = 0;
        const auto w = part.substr(eq + 1);
        const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), weight);
        if (ec != std::errc() || end != w.data() + w.size() || weight < 0 || weight > 1000000)
            return std::nullopt;
        mix[part.substr(0, eq)] = weight;
        total += weight;
    }
    if (total == 0) return std::nullopt;
    return mix;
}

std::string snippet_kinds() {
    std::string out;
    for (const auto& s : snippets()) out += (out.empty() ? "" : ", ") + std::string(s.name);
    return out;
}

snippet_mix::snippet_mix(const std::map<std::string, int>& weights) {
    std::vector<double> w;
    for (const auto& [name, weight] : weights) {
        if (weight <= 0) continue;
        kinds_.push_back(find(name)->kind);
        w.push_back(weight);
    }
    pick_ = std::discrete_distribution<std::size_t>(w.begin(), w.end());
}

snippet_kind snippet_mix::draw(std::mt19937& random) const {
    auto pick = pick_;
    return kinds_[pick(random)];
}

}  // namespace callisto::load
