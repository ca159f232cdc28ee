#include "gateway/jupyter_api/kernelspec_api.hpp"

#include <filesystem>

#include "gateway/http/content_headers.hpp"
#include "gateway/http/static_files.hpp"

namespace callisto::gateway::jupyter_api {

namespace fs = std::filesystem;

kernelspec_api::kernelspec_api(const launcher::kernelspec_catalog& catalog,
                               std::string default_name)
    : catalog_(catalog), default_name_(std::move(default_name)) {}

// As jupyter_server's kernelspec_model: kernel.js / kernel.css and every logo-* file.
nlohmann::json kernelspec_api::spec_model(const launcher::kernelspec& spec) const {
    nlohmann::json resources = nlohmann::json::object();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(spec.resource_dir, ec)) {
        const std::string file = entry.path().filename().string();
        const std::string url = "/kernelspecs/" + spec.name + "/" + file;
        if (file == "kernel.js" || file == "kernel.css")
            resources[file] = url;
        else if (file.rfind("logo-", 0) == 0)
            resources[entry.path().stem().string()] = url;
    }
    return {{"name", spec.name}, {"spec", spec.spec_json()}, {"resources", resources}};
}

void kernelspec_api::list(incoming_request in) const {
    nlohmann::json specs = nlohmann::json::object();
    for (const auto& spec : catalog_.all()) specs[spec.name] = spec_model(spec);
    in.respond(
        json_response(http::status::ok, {{"default", default_name_}, {"kernelspecs", specs}}));
}

void kernelspec_api::get(incoming_request in) const {
    const std::string& name = in.where.param("kernel_name");
    auto spec = catalog_.find(name);
    if (!spec) {
        // Refused at start: not offered, and why says what the admin must fix.
        if (auto why = catalog_.refusal(name))
            return in.respond(error_response(
                http::status::not_found, "Kernel spec " + name + " is not offered here: " + *why));
        return in.respond(
            error_response(http::status::not_found, "Kernel spec " + name + " not found"));
    }
    in.respond(json_response(http::status::ok, spec_model(*spec)));
}

void kernelspec_api::resource(incoming_request in) const {
    const std::string& name = in.where.param("kernel_name");
    const std::string& file = in.where.param("resource");
    auto spec = catalog_.find(name);
    if (!spec)
        return in.respond(
            error_response(http::status::not_found, "Kernel spec " + name + " not found"));
    auto res = serve_file(spec->resource_dir, file);
    // Logos and kernel.js load through <img> and <script>, which ignore these; opened as a
    // page, an SVG or HTML file there must not run as this origin.
    if (res.result() == http::status::ok) set_untrusted_file_headers(res, file);
    in.respond(std::move(res));
}

}  // namespace callisto::gateway::jupyter_api
