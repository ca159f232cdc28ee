#pragma once
// GET /api/kernelspecs, /api/kernelspecs/{name}, /kernelspecs/{name}/{file}.

#include <string>

#include "gateway/http/http_message.hpp"
#include "launcher/kernelspec_catalog.hpp"

namespace callisto::gateway::jupyter_api {

class kernelspec_api {
public:
    kernelspec_api(const launcher::kernelspec_catalog& catalog, std::string default_name);

    void handle(const route& r, const http_request& req, const respond_fn& respond) const;

private:
    nlohmann::json spec_model(const launcher::kernelspec& spec) const;

    const launcher::kernelspec_catalog& catalog_;
    std::string default_name_;
};

}  // namespace callisto::gateway::jupyter_api
