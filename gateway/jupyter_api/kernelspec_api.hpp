#pragma once
// GET /api/kernelspecs, /api/kernelspecs/{name}, /kernelspecs/{name}/{file}.

#include <string>

#include "gateway/http/http_message.hpp"
#include "gateway/http/incoming_request.hpp"
#include "launcher/kernelspec/kernelspec_catalog.hpp"

namespace callisto::gateway::jupyter_api {

class kernelspec_api {
public:
    kernelspec_api(const launcher::kernelspec_catalog& catalog, std::string default_name);

    // One method a route (the table in gateway/routes.cpp).
    void list(incoming_request in) const;
    void get(incoming_request in) const;       // {kernel_name}
    void resource(incoming_request in) const;  // {kernel_name}/{resource}

private:
    nlohmann::json spec_model(const launcher::kernelspec& spec) const;

    const launcher::kernelspec_catalog& catalog_;
    std::string default_name_;
};

}  // namespace callisto::gateway::jupyter_api
