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

void kernelspec_api::handle(const route& r, const http_request&, const respond_fn& respond) const {
    switch (r.kind) {
        case route_kind::kernelspecs_list: {
            nlohmann::json specs = nlohmann::json::object();
            for (const auto& spec : catalog_.all()) specs[spec.name] = spec_model(spec);
            respond(json_response(http::status::ok,
                                  {{"default", default_name_}, {"kernelspecs", specs}}));
            return;
        }
        case route_kind::kernelspec_get: {
            auto spec = catalog_.find(r.name);
            if (!spec) {
                // Refused at start: not offered, and why says what the admin must fix.
                if (auto why = catalog_.refusal(r.name))
                    return respond(
                        error_response(http::status::not_found,
                                       "Kernel spec " + r.name + " is not offered here: " + *why));
                return respond(error_response(http::status::not_found,
                                              "Kernel spec " + r.name + " not found"));
            }
            respond(json_response(http::status::ok, spec_model(*spec)));
            return;
        }
        case route_kind::kernelspec_resource: {
            auto spec = catalog_.find(r.name);
            if (!spec)
                return respond(error_response(http::status::not_found,
                                              "Kernel spec " + r.name + " not found"));
            auto res = serve_file(spec->resource_dir, r.file);
            // Logos and kernel.js load through <img> and <script>, which ignore these; opened
            // as a page, an SVG or HTML file there must not run as this origin.
            if (res.result() == http::status::ok) set_untrusted_file_headers(res, r.file);
            respond(std::move(res));
            return;
        }
        default: respond(error_response(http::status::not_found, "not found"));
    }
}

}  // namespace callisto::gateway::jupyter_api
